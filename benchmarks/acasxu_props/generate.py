"""Write the ACAS Xu properties 5-10 (Katz et al., CAV 2017, appendix VI) as VNN-LIB files.

The inputs are normalised as the ACAS Xu networks (and VNN-COMP's acasxu benchmark)
expect: ``x = (raw - mean) / range`` with the means and ranges below; bounds are
rounded to 9 decimals, as in the competition's files.  The angles use Katz et al.'s
constant 3.141592 (not pi) and rho's upper bound 62000 of property 6 is kept even
though it exceeds the training range (60760), as VNN-COMP's files do.

Each file states the *unsafe* set (a counterexample makes all assertions true):
"SR is not minimal" is the disjunction over ``i != 4`` of ``Y_i <= Y_4`` and so on.

Usage: python benchmarks/acasxu_props/generate.py   (rewrites the .vnnlib files next to it)
"""

from __future__ import annotations

from pathlib import Path

MEANS = (19791.091, 0.0, 0.0, 650.0, 600.0)
RANGES = (60261.0, 6.28318530718, 6.28318530718, 1100.0, 1200.0)
PI = 3.141592  # Katz et al.'s constant
NAMES = ("rho", "theta", "psi", "v_own", "v_int")
OUT = ("COC", "WL", "WR", "SL", "SR")

# property -> (network, raw input boxes [(lo, hi) x 5] (one or more), description, DNF of
# unsafe output conjunctions, each a list of (i, j) meaning Y_i <= Y_j), expected answer,
# where the expected answer comes from
PROPS = {
    5: ("1_1", [[(250, 400), (0.2, 0.4), (-PI, -PI + 0.005), (100, 400), (0, 400)]],
        "Unsafe if strong right is not minimal", [[(i, 4)] for i in range(4)], "holds"),
    6: ("1_1", [[(12000, 62000), (0.7, PI), (-PI, -PI + 0.005), (100, 1200), (0, 1200)],
                [(12000, 62000), (-PI, -0.7), (-PI, -PI + 0.005), (100, 1200), (0, 1200)]],
        "Unsafe if COC is not minimal", [[(i, 0)] for i in range(1, 5)], "holds"),
    7: ("1_9", [[(0, 60760), (-PI, PI), (-PI, PI), (100, 1200), (0, 1200)]],
        "Unsafe if strong left is minimal or strong right is minimal",
        [[(3, 0), (3, 1), (3, 2)], [(4, 0), (4, 1), (4, 2)]], "violated"),
    8: ("2_9", [[(0, 60760), (-PI, -0.75 * PI), (-0.1, 0.1), (600, 1200), (600, 1200)]],
        "Unsafe if neither COC nor weak left is minimal",
        [[(k, 0), (k, 1)] for k in (2, 3, 4)], "violated"),
    9: ("3_3", [[(2000, 7000), (-0.4, -0.14), (-PI, -PI + 0.01), (100, 150), (0, 150)]],
        "Unsafe if strong left is not minimal", [[(i, 3)] for i in (0, 1, 2, 4)], "holds"),
    10: ("4_5", [[(36000, 60760), (0.7, PI), (-PI, -PI + 0.01), (900, 1200), (600, 1200)]],
         "Unsafe if COC is not minimal", [[(i, 0)] for i in range(1, 5)], "holds"),
}

# Sources of the expected answers: Katz et al. 2017 (Reluplex, table 3): phi5, phi6, phi9,
# phi10 UNSAT, phi8 SAT, phi7 timed out there; VNN-COMP 2021/2022 acasxu reports
# (Bak et al. 2021, Mueller et al. 2022): prop 7 on net 1_9 and prop 8 on net 2_9 are sat
# (counterexamples found by nnenum, alpha-beta-CROWN and others), 5, 6, 9, 10 unsat.
SOURCE = {5: "Katz2017 UNSAT; VNN-COMP unsat", 6: "Katz2017 UNSAT; VNN-COMP unsat",
          7: "VNN-COMP 2021/22 sat (Katz2017: timeout)", 8: "Katz2017 SAT; VNN-COMP sat",
          9: "Katz2017 UNSAT; VNN-COMP unsat", 10: "Katz2017 UNSAT; VNN-COMP unsat"}


def norm(i: int, v: float) -> float:
    return round((v - MEANS[i]) / RANGES[i], 9)


def box_atoms(box) -> list[str]:
    out = []
    for i, (lo, hi) in enumerate(box):
        out += [f"(<= X_{i} {norm(i, hi)!r})", f"(>= X_{i} {norm(i, lo)!r})"]
    return out


def text(p: int) -> str:
    net, boxes, desc, dnf, _ = PROPS[p]
    lines = [f"; ACAS Xu property {p} (Katz et al. 2017), checked on network {net}", ""]
    lines += [f"(declare-const X_{i} Real)" for i in range(5)] + [""]
    lines += [f"(declare-const Y_{i} Real)" for i in range(5)] + [""]
    if len(boxes) == 1:
        for i, (lo, hi) in enumerate(boxes[0]):
            lines.append(f"; Unscaled input {i} ({NAMES[i]}): ({lo:.10g}, {hi:.10g})")
            a = box_atoms(boxes[0])
            lines += [f"(assert {a[2 * i]})", f"(assert {a[2 * i + 1]})", ""]
    else:
        for b in boxes:
            lines.append("; Unscaled box: " + ", ".join(f"{n} in ({lo:.10g}, {hi:.10g})" for n, (lo, hi) in zip(NAMES, b, strict=True)))
        lines.append("(assert (or")
        lines += [f"    (and {' '.join(box_atoms(b))})" for b in boxes]
        lines += ["))", ""]
    lines.append(f"; {desc} (outputs: {', '.join(f'Y_{i} = {o}' for i, o in enumerate(OUT))})")
    conj = [" ".join(f"(<= Y_{i} Y_{j})" for i, j in c) for c in dnf]
    lines.append("(assert (or")
    lines += [f"    (and {c})" for c in conj]
    lines += ["))", ""]
    return "\n".join(lines)


def main() -> None:
    here = Path(__file__).resolve().parent
    rows = ["onnx,vnnlib,expected,source"]
    for p in PROPS:
        (here / f"prop_{p}.vnnlib").write_text(text(p))
        rows.append(f"ACASXU_run2a_{PROPS[p][0]}_batch_2000.onnx,prop_{p}.vnnlib,{PROPS[p][4]},{SOURCE[p]}")
    (here / "expected.csv").write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
