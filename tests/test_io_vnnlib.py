"""VNN-LIB: the ACAS Xu properties checked by hand, disjunctions, terms, exact round trips,
and the documented error for each kind of bad file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from relulab.domain import Box, DomainError
from relulab.errors import FormatError
from relulab.io.vnnlib import format_vnnlib, load_vnnlib, parse_vnnlib, write_vnnlib
from relulab.spec import OutputConstraint, Property, SpecError, Specification

DECL = "".join(f"(declare-const X_{i} Real)\n" for i in range(2)) + "".join(
    f"(declare-const Y_{j} Real)\n" for j in range(3)
)
BOX = "(assert (>= X_0 -1)) (assert (<= X_0 1)) (assert (>= X_1 0)) (assert (<= X_1 2))\n"


def _same_property(a: Property, b: Property) -> bool:
    if len(a.cases) != len(b.cases):
        return False
    for ca, cb in zip(a.cases, b.cases, strict=True):
        if ca.input_box != cb.input_box or len(ca.unsafe) != len(cb.unsafe):
            return False
        for ta, tb in zip(ca.unsafe, cb.unsafe, strict=True):
            if not (np.array_equal(ta.C, tb.C) and np.array_equal(ta.d, tb.d)):
                return False
            if ta.C.shape != tb.C.shape:
                return False
    return True


def _vnnlib_files(acasxu_dir: Path) -> list[Path]:
    files = sorted((acasxu_dir / "vnnlib").glob("*.vnnlib"))
    assert files, "no .vnnlib files in the shared data"
    return files


# ----------------------------------------------------------------- ACAS Xu files
def test_every_acasxu_file_parses(acasxu_dir: Path, tmp_path: Path) -> None:
    for f in _vnnlib_files(acasxu_dir):
        prop = load_vnnlib(f, n_inputs=5, n_outputs=5)
        assert prop.source == str(f)
        assert len(prop.cases) == 1 and len(prop.cases[0].unsafe) == 1
        prop.check_fits(5, 5)
        # Written back and read again: the same numbers exactly.
        out = tmp_path / f.name
        write_vnnlib(prop, out)
        assert _same_property(load_vnnlib(out), prop)


def test_prop_1_by_hand(acasxu_dir: Path) -> None:
    prop = load_vnnlib(acasxu_dir / "vnnlib" / "prop_1.vnnlib")
    case = prop.cases[0]
    assert case.input_box == Box(
        [0.6, -0.5, -0.5, 0.45, -0.5], [0.679857769, 0.5, 0.5, 0.5, -0.45]
    )
    (term,) = case.unsafe
    # (assert (>= Y_0 3.991125645861615)) is the row -Y_0 <= -3.991125645861615.
    assert term.C.tolist() == [[-1.0, 0.0, 0.0, 0.0, 0.0]]
    assert term.d.tolist() == [-3.991125645861615]
    assert case.is_unsafe(np.array([4.0, 0, 0, 0, 0]))
    assert not case.is_unsafe(np.array([3.99, 9, 9, 9, 9]))


def test_prop_3_by_hand(acasxu_dir: Path) -> None:
    prop = load_vnnlib(acasxu_dir / "vnnlib" / "prop_3.vnnlib")
    case = prop.cases[0]
    assert case.input_box == Box(
        [-0.303531156, -0.009549297, 0.493380324, 0.3, 0.3],
        [-0.298552812, 0.009549297, 0.5, 0.5, 0.5],
    )
    (term,) = case.unsafe
    # (<= Y_0 Y_i) for i = 1..4: rows e_0 - e_i, d = 0.
    expected = np.zeros((4, 5))
    expected[:, 0] = 1.0
    expected[np.arange(4), np.arange(1, 5)] = -1.0
    assert np.array_equal(term.C, expected)
    assert term.d.tolist() == [0.0] * 4
    # Unsafe exactly when Y_0 is minimal, on random outputs.
    Y = np.random.default_rng(0).normal(size=(1000, 5))
    assert np.array_equal(case.is_unsafe(Y), Y[:, 0] <= Y[:, 1:].min(axis=1))


def test_prop_2_and_4_semantics(acasxu_dir: Path) -> None:
    Y = np.random.default_rng(1).normal(size=(1000, 5))
    p2 = load_vnnlib(acasxu_dir / "vnnlib" / "prop_2.vnnlib").cases[0]
    assert np.array_equal(p2.is_unsafe(Y), Y[:, 0] >= Y[:, 1:].max(axis=1))
    p4 = load_vnnlib(acasxu_dir / "vnnlib" / "prop_4.vnnlib").cases[0]
    # (<= X_2 0.0) (>= X_2 0.0): a single point, and the bound is +0.0 not -0.0.
    assert p4.input_box.lo[2] == 0.0 and p4.input_box.hi[2] == 0.0
    assert str(p4.input_box.hi[2]) == "0.0"


# -------------------------------------------------------------- disjunctions
def test_top_level_or_with_boxes_gives_cases() -> None:
    text = DECL + """
    ; two boxes, each with its own unsafe outputs
    (assert (or
        (and (>= X_0 0) (<= X_0 1) (>= X_1 0) (<= X_1 1) (<= Y_0 Y_1))
        (and (>= X_0 2) (<= X_0 3) (>= X_1 -1) (<= X_1 0) (>= Y_2 5) (<= Y_1 -5))
        (and (>= X_0 0) (<= X_0 1) (>= X_1 0) (<= X_1 1) (<= Y_0 Y_2))
    ))
    """
    prop = parse_vnnlib(text)
    assert len(prop.cases) == 2  # the first and third disjuncts share a box
    c0, c1 = prop.cases
    assert c0.input_box == Box([0, 0], [1, 1]) and c1.input_box == Box([2, -1], [3, 0])
    assert [t.C.tolist() for t in c0.unsafe] == [[[1, -1, 0]], [[1, 0, -1]]]
    assert [t.d.tolist() for t in c0.unsafe] == [[0.0], [0.0]]
    (t,) = c1.unsafe
    assert t.C.tolist() == [[0, 0, -1], [0, 1, 0]] and t.d.tolist() == [-5.0, -5.0]
    Y = np.random.default_rng(2).normal(size=(500, 3)) * 3
    assert np.array_equal(c0.is_unsafe(Y), (Y[:, 0] <= Y[:, 1]) | (Y[:, 0] <= Y[:, 2]))


def test_output_or_with_shared_box_and_cross_product() -> None:
    prop = parse_vnnlib(DECL + BOX + "(assert (or (<= Y_0 0) (and (>= Y_1 1) (>= Y_2 1))))")
    (case,) = prop.cases
    assert case.input_box == Box([-1, 0], [1, 2])
    assert [t.C.tolist() for t in case.unsafe] == [[[1, 0, 0]], [[0, -1, 0], [0, 0, -1]]]
    # Two disjunctive assertions multiply out: (a or b) and (c or d) has 4 disjuncts,
    # and an input disjunction splits the box into two cases.
    text = DECL + """
    (assert (or (and (>= X_0 -1) (<= X_0 0)) (and (>= X_0 0.5) (<= X_0 1))))
    (assert (>= X_1 0)) (assert (<= X_1 2))
    (assert (or (<= Y_0 0) (<= Y_1 0)))
    """
    prop = parse_vnnlib(text)
    assert [c.input_box for c in prop.cases] == [Box([-1, 0], [0, 2]), Box([0.5, 0], [1, 2])]
    for c in prop.cases:
        assert [t.C.tolist() for t in c.unsafe] == [[[1, 0, 0]], [[0, 1, 0]]]


def test_disjunctive_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    cases = []
    for k in range(3):
        lo = rng.normal(size=2)
        terms = [
            OutputConstraint(rng.normal(size=(r, 3)) / 7, rng.normal(size=r) * 1e-3)
            for r in (1, 2, 0)[: k + 1]
        ]
        cases.append(Specification(Box(lo, lo + rng.uniform(0.1, 1, size=2)), terms))
    # Rows written in their short forms too.
    cases.append(Specification(Box([0, 0], [1, 1]), [OutputConstraint(
        np.array([[1.0, -1.0, 0], [0, 0, -1.0], [0, 1.0, 0], [0, 0, 0], [2.5, 0, 0]]),
        np.array([0.0, -3.5, 1e-300, 4.0, -2.0]))]))
    prop = Property(cases, "random")
    p = tmp_path / "r.vnnlib"
    write_vnnlib(prop, p)
    back = load_vnnlib(p)
    assert _same_property(back, prop)
    single = Property([cases[1]])
    assert _same_property(parse_vnnlib(format_vnnlib(single)), single)


# -------------------------------------------------------------------- terms
def test_terms_and_strict_inequalities() -> None:
    text = DECL + """
    (assert (< -1 X_0 1.5e0))            ; a chain, strict: read as -1 <= X_0 <= 1.5
    (assert (and (> X_1 (- 2)) (<= (* 2 X_1) 3)))
    (assert (< (+ Y_0 (* -2 Y_1) (/ Y_2 4)) 1E-3))
    (assert (> (- Y_0 Y_1 1) (- Y_2)))
    (assert (= Y_1 -0.25))
    """
    (case,) = parse_vnnlib(text).cases
    assert case.input_box == Box([-1.0, -2.0], [1.5, 1.5])
    (t,) = case.unsafe
    assert t.C.tolist() == [[1, -2, 0.25], [-1, 1, -1], [0, 1, 0], [0, -1, 0]]
    assert t.d.tolist() == [1e-3, -1.0, -0.25, 0.25]
    strict = parse_vnnlib(DECL + BOX + "(assert (< Y_0 Y_1))").cases[0].unsafe[0]
    closed = parse_vnnlib(DECL + BOX + "(assert (<= Y_0 Y_1))").cases[0].unsafe[0]
    assert np.array_equal(strict.C, closed.C) and np.array_equal(strict.d, closed.d)


def test_constant_comparison_keeps_its_truth() -> None:
    t = parse_vnnlib(DECL + BOX + "(assert (<= 1 0))").cases[0].unsafe[0]
    assert t.C.tolist() == [[0, 0, 0]] and t.d.tolist() == [-1.0]
    assert not t.satisfied(np.zeros((1, 3)))[0]
    t = parse_vnnlib(DECL + BOX).cases[0].unsafe[0]  # no output constraint: all unsafe
    assert t.C.shape == (0, 3) and t.satisfied(np.zeros((1, 3)))[0]


# ------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "text, match",
    [
        (DECL + "(assert (<= X_0 1)\n", r"<string>:6:1: this '\(' is never closed"),
        (DECL + "(assert (<= X_0 1)))", r"<string>:6:20: unexpected '\)'"),
        (DECL + "(assert (<= X_0 #))", r"<string>:6:17: expected a number or a variable"),
        (DECL + '(assert (<= X_0 "1))', r"<string>:6:17: unexpected character"),
        (DECL + "(assert)", r"<string>:6:1: expected exactly one formula"),
        (DECL + "  X_0", r"<string>:6:3: expected '\(' to start a command"),
        (DECL + "(assert ())", r"<string>:6:9: expected an operator"),
        (DECL + "(assert (<= X_0))", r"<string>:6:9: '<=' needs at least two arguments"),
        ("(declare-const X_0)", r"<string>:1:1: expected \(declare-const NAME Real\)"),
    ],
)
def test_syntax_errors(text: str, match: str) -> None:
    with pytest.raises(FormatError, match=match):
        parse_vnnlib(text)


@pytest.mark.parametrize(
    "assertion, match",
    [
        ("(assert (=> (<= X_0 1) (<= Y_0 0)))", r"6:10: unsupported operator '=>'"),
        ("(assert (not (<= Y_0 0)))", r"6:10: unsupported operator 'not'"),
        ("(assert (<= (* Y_0 Y_1) 0))", r"6:13: unsupported: a non-linear product"),
        ("(assert (<= (* X_0 X_0) 0))", r"6:13: unsupported: a non-linear product"),
        ("(assert (<= Y_0 (/ 1 Y_1)))", r"6:17: unsupported: '/' must divide"),
        ("(assert (<= Y_7 0))", r"6:13: unknown variable 'Y_7'"),
        ("(assert (<= X_0 Y_0))", r"6:9: unsupported: a constraint mixing inputs"),
        ("(assert (<= (+ X_0 X_1) 1))", r"6:9: unsupported: an input constraint involving several"),
        ("(assert (<= (abs Y_0) 1))", r"6:14: unsupported operator 'abs'"),
        ("(assert (<= (ite true Y_0 X_0) 1))", r"6:14: unsupported operator 'ite'"),
        ("(push 1)", r"6:2: unsupported command 'push'"),
        ("(declare-const Z Real)", r"6:16: unsupported variable name 'Z'"),
        # a leading zero would silently make X_00 the same variable as X_0
        ("(declare-const X_03 Real)", r"6:16: unsupported variable name 'X_03'"),
        ("(assert (<= Y_00 0))", r"6:13: expected a number or a variable X_i / Y_j, found 'Y_00'"),
        # non-ASCII digits: 'X_1\u0660' was X_10 and '1\u0660' the number 10
        ("(declare-const X_1\u0660 Real)", r"6:16: unsupported variable name"),
        ("(assert (<= Y_0 1\u0660))", r"6:17: expected a number or a variable X_i / Y_j, found '1"),
        ("(declare-const X_3 Int)", r"6:20: unsupported sort"),
        ("(declare-const Y_0 Real)", r"6:16: Y_0 is declared twice"),
    ],
)
def test_unsupported_constructs(assertion: str, match: str) -> None:
    with pytest.raises(FormatError, match="<string>:" + match):
        parse_vnnlib(DECL + assertion + "\n" + BOX)


def test_missing_bounds() -> None:
    text = DECL + "(assert (>= X_0 -1)) (assert (<= X_0 1)) (assert (<= X_1 2))"
    with pytest.raises(FormatError, match=r"X_1 has no lower bound \(declared at <string>:2:16\)"):
        parse_vnnlib(text)
    text = DECL + "(assert (or (and (>= X_0 0) (<= X_0 1) (>= X_1 0) (<= X_1 1)) (and (>= X_0 0) (<= X_1 1) (>= X_1 0))))"
    with pytest.raises(FormatError, match=r"X_0 has no upper bound \(in disjunct 2 of 2\)"):
        parse_vnnlib(text)
    with pytest.raises(FormatError, match="X_0 has no lower bound"):
        parse_vnnlib(DECL)


def test_empty_box() -> None:
    text = DECL + BOX + "(assert (>= X_1 2.5))"
    with pytest.raises(DomainError, match=r"empty input box: X_1 >= 2.5 \(<string>:7:9\) and X_1 <= 2.0"):
        parse_vnnlib(text)


def test_sizes_and_other_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="declares 2 inputs X_i; expected 5"):
        parse_vnnlib(DECL + BOX, n_inputs=5)
    with pytest.raises(SpecError, match="declares 3 outputs Y_j; expected 2"):
        parse_vnnlib(DECL + BOX, n_outputs=2)
    with pytest.raises(FormatError, match="X_1 is not declared but X_2 is"):
        parse_vnnlib("(declare-const X_0 Real)(declare-const X_2 Real)")
    with pytest.raises(FormatError, match="never hold"):
        parse_vnnlib(DECL + BOX + "(assert (or))")
    with pytest.raises(FormatError, match="never hold"):
        parse_vnnlib(DECL + BOX + "(assert false)")
    with pytest.raises(FormatError, match="cannot read"):
        load_vnnlib(tmp_path / "missing.vnnlib")
    p = tmp_path / "bad.vnnlib"
    p.write_text(DECL + "(assert (<= X_0 1)")
    with pytest.raises(FormatError, match=rf"{p}:6:1: this '\(' is never closed"):
        load_vnnlib(p)


def test_mutated_files_never_crash(acasxu_dir: Path) -> None:
    """Random edits of a real property either parse or raise a relulab error (never a
    Python exception from inside the parser)."""
    from relulab.errors import RelulabError

    text = (acasxu_dir / "vnnlib" / "prop_3.vnnlib").read_text()
    pieces = ["(", ")", " ", "X_9", "Y_0", "-", "1e400", ";", "(or", "(and", "0", "\n", ">=", "*"]
    rng = np.random.default_rng(7)
    outcomes = {"parsed": 0, "refused": 0}
    for _ in range(300):
        t = text
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(0, len(t)))
            if rng.random() < 0.5:
                t = t[:i] + t[i + int(rng.integers(1, 6)):]
            else:
                t = t[:i] + str(rng.choice(pieces)) + t[i:]
        try:
            parse_vnnlib(t)
            outcomes["parsed"] += 1
        except RelulabError:
            outcomes["refused"] += 1
    assert outcomes["parsed"] > 0 and outcomes["refused"] > 0


def test_out_of_range_numbers() -> None:
    with pytest.raises(FormatError, match=r"<string>:6:17: the number 1e400 is out of the float64 range"):
        parse_vnnlib(DECL + "(assert (<= Y_0 1e400))")
    with pytest.raises(FormatError, match=r"<string>:6:9: the constraint's coefficients overflow"):
        parse_vnnlib(DECL + "(assert (<= (* 1e300 1e300 Y_0) 1))")


def test_deep_nesting_is_refused_cleanly() -> None:
    deep = "(and " * 5000 + "(<= Y_0 0)" + ")" * 5000
    with pytest.raises(FormatError, match="nested too deeply"):
        parse_vnnlib(DECL + BOX + f"(assert {deep})")
    ok = "(and " * 50 + "(<= Y_0 0)" + ")" * 50
    assert parse_vnnlib(DECL + BOX + f"(assert {ok})").cases[0].unsafe[0].C.tolist() == [[1, 0, 0]]


def test_a_dnf_too_large_in_constraints_is_refused_at_its_assert() -> None:
    # the cap counted disjuncts only: 17 asserts, each an "or" of two 100-atom
    # conjunctions (2^17 disjuncts of 1,700 constraints, a 41 KB file), ran out of memory
    from relulab.io.vnnlib import MAX_DNF_ATOMS

    head = "(declare-const X_0 Real)\n(declare-const Y_0 Real)\n"
    conj = "(and " + " ".join(f"(<= Y_0 {k})" for k in range(300)) + ")"
    body = "".join(f"(assert (or {conj} {conj}))\n" for _ in range(12))
    with pytest.raises(FormatError, match=rf"^<string>:13:1: .* more than {MAX_DNF_ATOMS} constraints"):
        parse_vnnlib(head + body)


def test_a_byte_order_mark_is_not_a_stray_character(tmp_path):
    # files saved by some Windows editors start with U+FEFF: it was refused as an
    # unexpected character (the NNet reader accepts it)
    from relulab.io.vnnlib import load_vnnlib

    text = "(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (<= Y_0 -2.5))\n"
    plain, marked = tmp_path / "p.vnnlib", tmp_path / "bom.vnnlib"
    plain.write_text(text, encoding="utf-8")
    marked.write_text("\ufeff" + text, encoding="utf-8")
    a, b = load_vnnlib(plain), load_vnnlib(marked)
    assert b.cases[0].input_box == a.cases[0].input_box
    assert b.cases[0].unsafe[0].d.tolist() == a.cases[0].unsafe[0].d.tolist() == [-2.5]
