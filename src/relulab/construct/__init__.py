"""Exact constructions: networks built from specifications, with Fraction weights.

Every function here returns a :class:`relulab.Network` whose entries are
:class:`fractions.Fraction` (``.float()`` gives the float64 copy) and states what it
computes and its size in its docstring.

* max / min: :func:`max_n`, :func:`min_n`, lattice CPWL :func:`max_of_mins`;
  max of 5 and of 6 with two hidden layers :func:`max5_two_hidden`,
  :func:`max6_two_hidden` (exact search
  :func:`search_max_two_hidden`, certificate :func:`certify_max`); max_n with two
  hidden layers and first layer ``relu(x_i - x_j)`` :func:`max_n_two_hidden` (search
  :func:`search_max_pairs`, certificate :func:`certify_max_cones`) and the recursive
  substitution :func:`max_n_deep`
* univariate CPWL: :func:`cpwl_1d`, exact pieces :func:`univariate_pieces`
* depth: :func:`tent`, :func:`sawtooth`, :func:`yarotsky_square`, :func:`product`,
  :func:`monomial` with exact errors :func:`square_error`, :func:`product_error`,
  :func:`monomial_error`
* Boolean circuits: :class:`Circuit`, :func:`parse_circuit`, :func:`compile_circuit`,
  :func:`gate`, :func:`dnf`, :func:`ripple_carry_adder`, :func:`comparator`
* hardness gadget: :func:`sat_gadget`; smoothed-verification diagnostics
  :func:`perturb`, :func:`smoothed_gap`, :func:`exact_max_bruteforce`
* Turing machines: :class:`TuringMachine`, :func:`compile_turing_machine`, examples
* Turing machines as transformers (Wei-Chen-Ma): :func:`compile_transformer`,
  :func:`run_transformer`, :func:`transformer_exact_length`
* refinement iterates: :func:`refinement_iterate`, :func:`subdivision_network` (wide)
* integral representations of polynomials by two-layer ReLU networks:
  :func:`integral_representation`, :func:`quadrature_network`, :func:`harmonic_extension`
* other activations: :func:`replace_relu`, :func:`approximate_relu_network` (a ReLU
  network as a GELU/Sigmoid/... network, Zhang-Lu-Zhao), :func:`activation`
* refinement iterates: :func:`refinement_iterate`, :func:`subdivision_network` (wide);
  at fixed width :func:`refinement_network` (depth linear in the steps), checked by
  :func:`check_refinement_network` against :func:`subdivision_iterate`;
  :func:`scheme_convergence`
* depth hierarchy: :func:`hierarchy_network` (k hidden layers, width 3d),
  :func:`hierarchy_report`

Example:
    >>> from relulab.construct import max_n
    >>> max_n(8).widths
    (12, 6, 3)
"""

from ._exact import ExactEvaluator
from .actfuncs import ACTIVATION_NAMES, Activation, activation
from .activations import (
    ActivationNetwork,
    ApproximationReport,
    approximate_relu_network,
    replace_relu,
)
from .circuits import (
    Circuit,
    CircuitCheck,
    Gate,
    check_circuit,
    comparator,
    compile_circuit,
    dnf,
    gate,
    parse_circuit,
    ripple_carry_adder,
)
from .cpwl import Piece, breakpoints_1d, count_pieces, cpwl_1d, univariate_pieces
from .hardness import (
    GadgetCheck,
    check_gadget,
    min_unsat,
    parse_dimacs,
    random_3cnf,
    round_half,
    sat_gadget,
)
from .hierarchy import (
    HierarchyReport,
    hierarchy_network,
    hierarchy_report,
    hierarchy_scale,
    hierarchy_value,
    shallow_width_bound,
)
from .integral import (
    IntegralRepresentation,
    QuadratureReport,
    harmonic_extension,
    integral_representation,
    quadrature_network,
    quadrature_report,
)
from .maxmin import (
    ConstructionError,
    LatticeSize,
    chen_bound,
    lattice_size,
    max_n,
    max_of_mins,
    min_n,
    tree_widths,
)
from .maxn import (
    MAXN_LARGE,
    MAXN_STORED,
    MaxNCertificate,
    MaxPairsSolution,
    PairTerm,
    candidate_terms,
    certify_arrays,
    certify_max_cones,
    certify_max_pairs,
    deep_capacity,
    deep_layers,
    log6_layers,
    max_n_two_hidden,
    max_pairs_network,
    random_terms,
    search_max_pairs,
    stored_max_pairs,
    two_hidden_available,
)
from .maxn_blocks import (
    MAXN_BLOCKS,
    BlockTerm,
    MaxBlocksSolution,
    block_candidates,
    certify_max_blocks,
    eval_max_blocks,
    max_blocks_arrays,
    max_blocks_network,
    search_max_blocks,
    stored_max_blocks,
)
from .maxn_colgen import ColGenResult, colgen_max_pairs, orbit_column, random_item_terms
from .maxn_decide import FamilyDecision, check_certificate, decide_family, family_system
from .maxn_deep import (
    DeepMax,
    DeepMaxCertificate,
    certified_bases,
    certify_max_deep,
    deep_cap,
    deep_depth,
    deep_max_network,
    eval_max_deep,
    eval_sum_of_maxes,
    max_deep,
    max_n_deep,
    max_of_mins_deep,
    sum_of_maxes_deep,
    sum_of_maxes_network,
)
from .maxn_items import eval_max_pairs, item_family, item_orbits
from .maxsearch import (
    MAX5_SOLUTION,
    MAX6_SOLUTION,
    MaxCertificate,
    MaxSearchResult,
    certify_max,
    is_symmetric,
    max5_two_hidden,
    max6_two_hidden,
    max_two_hidden_from_terms,
    search_max_two_hidden,
)
from .polynomial import Polynomial, parse_polynomial
from .refine import (
    MASKS,
    RefinementCheck,
    SparseExact,
    check_refinement_network,
    prove_equal_1d,
    refinement_network,
    refinement_sizes,
)
from .refine_scheme import (
    ConvergenceCheck,
    check_seed,
    parse_mask,
    scheme_convergence,
    subdivision_coefficients,
    subdivision_iterate,
)
from .sawtooth import (
    ErrorReport,
    monomial,
    monomial_error,
    product,
    product_error,
    sawtooth,
    square_error,
    tent,
    yarotsky_square,
)
from .smoothed import (
    SIGMA_STAR,
    SmoothedGap,
    block_formula,
    exact_max_bruteforce,
    normalized_gadget,
    perturb,
    smoothed_gap,
)
from .subdivision import cascade_value, evaluate_cpwl, refinement_iterate, subdivision_network
from .transformer import (
    TransformerExactness,
    TransformerRun,
    TransformerTM,
    compile_transformer,
    run_transformer,
    same_config,
    teacher_forced_streams,
    transformer_exact_length,
)
from .turing import (
    MACHINES,
    Config,
    TuringMachine,
    balanced_parentheses,
    binary_increment,
    busy_beaver_2,
    compile_turing_machine,
    decode_config,
    encode_config,
    float_exact_length,
    machine_from_json,
    run_batch,
    run_network,
    unary_addition,
)

__all__ = [
    "ConstructionError",
    "max_n",
    "min_n",
    "tree_widths",
    "max_of_mins",
    "LatticeSize",
    "lattice_size",
    "chen_bound",
    "cpwl_1d",
    "Piece",
    "univariate_pieces",
    "count_pieces",
    "breakpoints_1d",
    "tent",
    "sawtooth",
    "yarotsky_square",
    "product",
    "monomial",
    "ErrorReport",
    "square_error",
    "product_error",
    "monomial_error",
    "ExactEvaluator",
    "Gate",
    "Circuit",
    "CircuitCheck",
    "parse_circuit",
    "compile_circuit",
    "check_circuit",
    "gate",
    "dnf",
    "ripple_carry_adder",
    "comparator",
    "sat_gadget",
    "random_3cnf",
    "min_unsat",
    "round_half",
    "check_gadget",
    "GadgetCheck",
    "parse_dimacs",
    "max5_two_hidden",
    "max6_two_hidden",
    "MAX6_SOLUTION",
    "search_max_two_hidden",
    "max_two_hidden_from_terms",
    "certify_max",
    "is_symmetric",
    "MaxCertificate",
    "MaxSearchResult",
    "MAX5_SOLUTION",
    "max_n_two_hidden",
    "max_n_deep",
    "deep_capacity",
    "deep_layers",
    "log6_layers",
    "max_of_mins_deep",
    "max_deep",
    "eval_max_deep",
    "deep_max_network",
    "certify_max_deep",
    "certified_bases",
    "deep_cap",
    "deep_depth",
    "DeepMax",
    "DeepMaxCertificate",
    "sum_of_maxes_deep",
    "sum_of_maxes_network",
    "eval_sum_of_maxes",
    "search_max_pairs",
    "max_pairs_network",
    "certify_max_cones",
    "certify_max_pairs",
    "stored_max_pairs",
    "candidate_terms",
    "random_terms",
    "PairTerm",
    "MaxPairsSolution",
    "MaxNCertificate",
    "MAXN_STORED",
    "MAXN_LARGE",
    "certify_arrays",
    "two_hidden_available",
    "item_orbits",
    "item_family",
    "colgen_max_pairs",
    "ColGenResult",
    "orbit_column",
    "random_item_terms",
    "FamilyDecision",
    "check_certificate",
    "decide_family",
    "family_system",
    "eval_max_pairs",
    "BlockTerm",
    "MaxBlocksSolution",
    "block_candidates",
    "search_max_blocks",
    "max_blocks_arrays",
    "max_blocks_network",
    "certify_max_blocks",
    "stored_max_blocks",
    "eval_max_blocks",
    "MAXN_BLOCKS",
    "refinement_iterate",
    "subdivision_network",
    "cascade_value",
    "evaluate_cpwl",
    "refinement_network",
    "check_refinement_network",
    "RefinementCheck",
    "refinement_sizes",
    "SparseExact",
    "prove_equal_1d",
    "MASKS",
    "parse_mask",
    "check_seed",
    "scheme_convergence",
    "ConvergenceCheck",
    "subdivision_coefficients",
    "subdivision_iterate",
    "hierarchy_network",
    "hierarchy_value",
    "hierarchy_scale",
    "hierarchy_report",
    "HierarchyReport",
    "shallow_width_bound",
    "TuringMachine",
    "Config",
    "compile_turing_machine",
    "encode_config",
    "decode_config",
    "run_network",
    "run_batch",
    "float_exact_length",
    "machine_from_json",
    "binary_increment",
    "balanced_parentheses",
    "unary_addition",
    "busy_beaver_2",
    "MACHINES",
    "ACTIVATION_NAMES",
    "Activation",
    "activation",
    "ActivationNetwork",
    "ApproximationReport",
    "replace_relu",
    "approximate_relu_network",
    "Polynomial",
    "parse_polynomial",
    "IntegralRepresentation",
    "integral_representation",
    "harmonic_extension",
    "quadrature_network",
    "QuadratureReport",
    "quadrature_report",
    "TransformerTM",
    "compile_transformer",
    "TransformerRun",
    "run_transformer",
    "TransformerExactness",
    "transformer_exact_length",
    "teacher_forced_streams",
    "same_config",
    "normalized_gadget",
    "perturb",
    "block_formula",
    "exact_max_bruteforce",
    "SmoothedGap",
    "smoothed_gap",
    "SIGMA_STAR",
]
