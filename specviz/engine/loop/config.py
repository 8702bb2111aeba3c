"""SpecConfig: every knob of one decoding run, validated in one place.

The same config drives the speculative loop and the plain baseline, so a race compares
like with like. Temperature 0 means greedy decoding (argmax, verification by argmax match).
A temperature between 0 and MIN_TEMPERATURE is refused (one line naming the field): dividing
logits by 1e-39 overflows float32 to inf and softmax then gives NaN; below 1e-3 sampling is
greedy in all but name anyway, so ask for 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from ...errors import ConfigError
from ...runtime.tree_pass import tree_nodes     # the one count of a tree's nodes (config users import it here)
from .drafters import DEFAULT_DRAFTER, DRAFTERS
from .rules import get_rule

K_RANGE = (1, 32)
# A run's seed. The lossless check seeds its samples seed * SEED_STRIDE + i (analysis/lossless.py), wrapped
# into this range; the page, the API, the CLI and the engine all take seeds up to here.
SEED_MAX = 2**32 - 1
MAX_NEW_TOKENS_RANGE = (1, 8192)
MIN_TEMPERATURE = 1e-3            # smallest non-zero temperature (and draft_temperature); 0 = greedy
TEMPERATURE_MAX = 5.0             # highest temperature (and draft_temperature) a run takes
TREE_WIDTH_MAX = 8                # candidates per node at one depth of a token tree
TREE_NODES_MAX = 256              # nodes of a token tree at most (one target pass checks them all)
CONFIDENCE_STOP_MAX = 0.95        # highest confidence_stop (the page's slider and the presets use it too)
# The settings a token tree refuses, each with its one reason (every other setting has a tree form: the
# rules judge a node against its siblings' residual, prompt lookup proposes branches, the confidence
# stop leaves an unsure node childless, CUDA graphs capture the verify pass by node count). One value is
# refused besides: the block rule, whose joint test follows one path (`_check_rule`).
TREE_REFUSES = {
    "fast": "torch.compile's static-cache steps take no tree mask (cuda_graphs runs trees on a static cache)",
    "adaptive_k": "adaptive k lengthens and shortens a chain; a tree keeps its shape (tree_budget adapts a tree)",
}


@dataclass(frozen=True)
class SpecConfig:
    k: int = 4                    # tokens drafted per round (the starting value when adaptive_k)
    temperature: float = 0.0      # 0 = greedy; otherwise logits are divided by it
    top_k: int = 0                # keep the top_k most likely tokens; 0 = off
    top_p: float = 1.0            # keep the smallest set with mass >= top_p; 1 = off
    max_new_tokens: int = 128     # generated tokens at most (EOS included)
    seed: int = 0                 # seeds the run's own random generator (sampling and acceptance draws)
    drafter: str = DEFAULT_DRAFTER   # a name in drafters.DRAFTERS: "model" (the draft LM), "prompt_lookup" (n-gram match)
    adaptive_k: bool = False      # grow k after an all-accepted round, shrink it after a rejection
    k_min: int = 1                # adaptive bounds
    k_max: int = 12
    # Stop a round's drafting early once the draft is unsure: after drafting a token whose
    # probability under the draft's own softmax is below this, draft no more that round (k is
    # then the most drafted). 0 = off: always k. Exact either way: whether position i + 1 is
    # drafted depends only on tokens already drafted, never on the draft at i + 1 (drafters.py).
    # Under adaptive_k a round cut short leaves k as it was (it did not draft the k planned).
    confidence_stop: float = 0.0
    lookup_ngram: int = 3         # prompt lookup: longest n-gram tried when matching the tail
    stop_strings: tuple[str, ...] = field(default_factory=tuple)  # stop once the text contains one
    # The draft model samples at its own temperature (None: the run's). A "hot" draft guesses
    # worse, so fewer drafts pass; the output is still exactly the target's, because the rule
    # divides by the q the draft really sampled from (teaching: a deliberately bad draft).
    draft_temperature: float | None = None
    # BENCHMARKING ONLY, NOT LOSSLESS: accept each draft with this fixed probability instead of
    # min(1, p/q), to time the engine at a chosen acceptance rate on random-weight models.
    # Never offered in the app. None = the exact rule.
    forced_acceptance: float | None = None
    # The acceptance rule (engine/loop/rules.py): "exact" = min(1, p/q) with the residual, the only
    # default. "block" = block verification (block.py): a chain's drafts judged jointly, lossless,
    # keeps at least as many; chains only, and the argmax match at temperature 0. Others
    # ("sample_match", "greedy_match", "typical(...)", "ensemble(w=...)") exist to show what they trade;
    # most are lossy, and each is named in every verdict and in Done.stats.
    # Stored in canonical form with its parameters; rules other than exact and block need temperature > 0.
    rule: str = "exact"
    # Execution, not sampling: a static KV cache with compiled decode steps (CUDA graphs on
    # CUDA), for both lanes alike. Compiles on first use of each shape. See static_model.py.
    fast: bool = False
    # Execution: a static KV cache with decode steps replayed as CUDA graphs, captured directly on
    # first use (seconds, no compiling). None: on when the models are on CUDA (graph_model.py);
    # False: the eager path; True: also off CUDA (replayed eagerly: for tests). `fast` wins over it.
    cuda_graphs: bool | None = None
    # A token tree instead of a chain (engine/loop/proposal.py): the draft's candidates per depth,
    # e.g. (2, 2, 1, 1) = two first tokens, two continuations of each, then one and one (14 nodes,
    # depth 4). The target checks every node in one pass; k is then unused. None: the chain of k,
    # which runs as the tree (1,) * k. What a tree refuses is in TREE_REFUSES.
    tree: tuple[int, ...] | None = None
    # A dynamic tree (EAGLE-2's idea, Li et al. 2024): at most this many nodes, spent depth by depth on
    # the nodes the draft is surest of (the product of its probabilities along the path), each given at
    # most the tree's width at that depth. 0: the static shape `tree`, every node. Needs `tree`.
    tree_budget: int = 0

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "stop_strings", tuple(self.stop_strings))
        _check_int("k", self.k, *K_RANGE)
        _check_int("k_min", self.k_min, *K_RANGE)
        _check_int("k_max", self.k_max, *K_RANGE)
        if self.k_min > self.k_max:
            raise ConfigError(f"k_min ({self.k_min}) must not exceed k_max ({self.k_max})", field="k_min")
        _check_temperature("temperature", self.temperature)
        if self.draft_temperature is not None:
            _check_temperature("draft_temperature", self.draft_temperature)
        _check_int("top_k", self.top_k, 0, 10_000_000)
        _check_float("top_p", self.top_p, 0.0, 1.0)
        if self.top_p <= 0:
            raise ConfigError("top_p must be greater than 0 (1 turns it off)", field="top_p")
        _check_int("max_new_tokens", self.max_new_tokens, *MAX_NEW_TOKENS_RANGE)
        _check_int("seed", self.seed, 0, SEED_MAX)
        _check_int("lookup_ngram", self.lookup_ngram, 1, 16)
        _check_float("confidence_stop", self.confidence_stop, 0.0, CONFIDENCE_STOP_MAX, low="0 (off)")
        if not isinstance(self.drafter, str) or self.drafter not in DRAFTERS:
            shown = f", not {self.drafter[:40]!r}" if isinstance(self.drafter, str) else ""     # a long value cut
            raise ConfigError(f"drafter must be one of {', '.join(DRAFTERS)}{shown}", field="drafter")
        for name in ("adaptive_k", "fast"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false", field=name)
        if self.cuda_graphs not in (None, True, False):
            raise ConfigError("cuda_graphs must be true, false or unset (automatic)", field="cuda_graphs")
        if self.forced_acceptance is not None:
            _check_float("forced_acceptance", self.forced_acceptance, 0.0, 1.0)
        self._check_rule()
        self._check_tree()
        for s in self.stop_strings:
            if not isinstance(s, str) or not s:
                raise ConfigError("stop strings must be non-empty text", field="stop_strings")

    def _check_rule(self) -> None:
        try:
            rule = get_rule(self.rule)
        except ConfigError as err:          # named as the field, so a front end can say it in its own words
            raise ConfigError(str(err), field="rule") from None
        object.__setattr__(self, "rule", rule.name)
        if rule.joint and self.tree is not None:
            raise ConfigError("the block rule judges a chain's drafts jointly; a token tree has no block form "
                              "(its weights follow one path; over siblings' residuals the test is not derived)",
                              field="rule")
        # At temperature 0 the block rule's test is the argmax match (block.py), as the exact rule's is.
        if rule.name != "exact" and not rule.joint and self.greedy:
            raise ConfigError(f"the {rule.name} rule compares sampled distributions: it needs temperature > 0 "
                              f"(at temperature 0 the exact rule already is the argmax match)", field="rule")
        if rule.name != "exact" and self.forced_acceptance is not None:
            raise ConfigError("forced_acceptance replaces the acceptance rule: leave rule at exact")

    def _check_tree(self) -> None:
        _check_int("tree_budget", self.tree_budget, 0, TREE_NODES_MAX)
        if self.tree is None:
            if self.tree_budget:
                raise ConfigError("tree_budget shapes a token tree: give tree too (the widths per depth at most)",
                                  field="tree_budget")
            return
        if isinstance(self.tree, str) or not isinstance(self.tree, (tuple, list)) or not self.tree:
            raise ConfigError(f"tree must be candidates per depth such as 2,2,1,1, not {str(self.tree)[:40]!r}",
                              field="tree")
        object.__setattr__(self, "tree", tuple(self.tree))
        _check_int("tree depth", len(self.tree), *K_RANGE)
        for width in self.tree:
            _check_int("tree width", width, 1, TREE_WIDTH_MAX)
        if not self.tree_budget and tree_nodes(self.tree) > TREE_NODES_MAX:
            raise ConfigError(f"the tree {','.join(map(str, self.tree))} has {tree_nodes(self.tree)} nodes; "
                              f"at most {TREE_NODES_MAX} (or set tree_budget)")
        for name, why in TREE_REFUSES.items():
            if getattr(self, name):
                raise ConfigError(f"a token tree cannot run with {name}: {why}", field=name)

    def to_dict(self) -> dict:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}


def _check_int(name: str, value, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be a whole number, not {str(value)[:40]!r}", field=name)
    if not lo <= value <= hi:
        raise ConfigError(f"{name} must be between {lo} and {hi}, not {value}", field=name)


def _check_float(name: str, value, lo: float, hi: float, low: str | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{name} must be a number, not {str(value)[:40]!r}", field=name)
    if not lo <= value <= hi:
        raise ConfigError(f"{name} must be between {low or lo} and {hi}, not {value}", field=name)


def _check_temperature(name: str, value) -> None:
    _check_float(name, value, 0.0, TEMPERATURE_MAX)
    if 0 < value < MIN_TEMPERATURE:
        raise ConfigError(f"{name} must be 0 (greedy) or at least {MIN_TEMPERATURE:g}, not {value:g}", field=name)


def parse_tree(text: str) -> tuple[int, ...]:
    """'2,2,1,1' -> (2, 2, 1, 1) (the CLI's --tree); a bad part is refused in one line."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ConfigError(f"tree must be whole numbers separated by commas, such as 2,2,1,1, not {text!r}") from None


def planned_nodes(cfg: SpecConfig) -> int:
    """Nodes a full tree round drafts: the static shape's (a drafter of branches only, prompt lookup:
    the first width's chains, each as deep as the tree), or at most the budget."""
    shape = cfg.tree
    full = shape[0] * len(shape) if DRAFTERS[cfg.drafter].branches_only else tree_nodes(shape)
    return min(full, cfg.tree_budget) if cfg.tree_budget else full
