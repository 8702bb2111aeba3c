"""Growing a draft (train-models --grow-layers): the appended layers start adding nothing, so the grown
draft's logits are the draft's, and the new layers can learn."""
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specviz.errors import ConfigError
from specviz.training.distill import grow_draft, make_draft

VOCAB, WIDTH = 48, 32


def tiny_target() -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=WIDTH, intermediate_size=64, num_hidden_layers=4,
                                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                        tie_word_embeddings=False)).eval()


def test_grown_draft_starts_as_the_draft():
    target = tiny_target()
    draft = make_draft(target, [0], list(range(0, VOCAB, 2)), "test/target")
    with torch.no_grad():                          # a draft that is not a fresh cut of the target
        draft.model.layers[0].mlp.up_proj.weight.mul_(1.5)
    grown = grow_draft(draft, target, [2, 3])
    assert grown.config.num_hidden_layers == 3 and grown.config.head_size == draft.config.head_size
    ids = torch.randint(0, VOCAB, (2, 11), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        before, after = draft(ids).logits, grown(ids).logits
    assert torch.equal(torch.isinf(before), torch.isinf(after))
    finite = torch.isfinite(before)
    torch.testing.assert_close(after[finite], before[finite], rtol=0, atol=1e-6)
    # the new layers are the target's, less their two residual outputs; the old layer is the draft's own
    new = grown.model.layers[1]
    assert torch.equal(new.self_attn.q_proj.weight, target.model.layers[2].self_attn.q_proj.weight)
    assert not new.self_attn.o_proj.weight.any() and not new.mlp.down_proj.weight.any()
    assert torch.equal(grown.model.layers[0].mlp.up_proj.weight, draft.model.layers[0].mlp.up_proj.weight)
    # the borrowed tensors are the target's, not trained
    assert grown.model.embed_tokens is target.get_input_embeddings()
    assert not grown.lm_head.proj.weight.requires_grad


def test_grown_layers_get_gradients():
    target = tiny_target()
    grown = grow_draft(make_draft(target, [0], list(range(VOCAB)), "test/target"), target, [1])
    ids = torch.randint(0, VOCAB, (2, 9), generator=torch.Generator().manual_seed(2))
    grown(ids, labels=ids).loss.backward()
    new = grown.model.layers[1]
    assert new.self_attn.o_proj.weight.grad.abs().sum() > 0 and new.mlp.down_proj.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("layers", [[], [4], [-1]])
def test_growing_from_a_layer_the_target_lacks_is_refused(layers):
    target = tiny_target()
    with pytest.raises(ConfigError, match="layers are 0 to 3, not"):
        grow_draft(make_draft(target, [0], list(range(VOCAB)), "test/target"), target, layers)
