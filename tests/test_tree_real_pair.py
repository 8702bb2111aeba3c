"""Token trees on the real pair (SmolLM2-135M-Instruct + the shipped draft): greedy tree output is
generate()'s token for token, with rejections and kept second choices along the way."""
from __future__ import annotations

import pytest

from specviz import SpecConfig, speculate
from specviz.bench.runner import hf_generate
from specviz.models.chat import chat_ids

pytestmark = pytest.mark.slow    # SmolLM2-135M in fp32


@pytest.mark.parametrize("tree,budget", [((2, 2, 1, 1), 0), ((3, 1, 1), 0), ((4, 4, 2, 2), 8)], ids=str)
def test_greedy_tree_is_token_identical_to_generate(real_pair, tree, budget):
    prompts = [chat_ids(real_pair.tokenizer, "List five tips for staying focused while studying."),
               real_pair.tokenizer("def merge_sort(items):\n    \"\"\"Sort a list with merge sort.\"\"\"")["input_ids"]]
    second = 0
    for ids in prompts:
        cfg = SpecConfig(tree=tree, tree_budget=budget, max_new_tokens=48)
        done = list(speculate(real_pair, ids, cfg))[-1]
        assert list(done.token_ids) == hf_generate(real_pair, ids, cfg)
        assert done.stats.tally.rejected > 0
        second += sum(row["accepted"] for row in done.stats.by_choice if row["choice"] > 0)
    assert second > 0       # a second choice was the target's token somewhere
