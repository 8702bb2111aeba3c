"""The drafts' distillation loops (trainer.train_steps under distill.py and feature_distill.py),
end to end on tiny models and planted tasks: held-out agreement must rise from chance."""
import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specviz.training.distill import Sequence, make_draft, train_draft, validate
from specviz.training.feature_distill import Example, train_feature_draft
from specviz.training.feature_distill import validate as validate_features
from specviz.training.feature_unroll import from_borrowed
from specviz.training.trainer import TrainSettings

pytestmark = pytest.mark.slow    # each test trains a draft for seconds

VOCAB, WIDTH, LENGTH = 32, 32, 20


def tiny_target() -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=WIDTH, intermediate_size=64, num_hidden_layers=1,
                                        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
                                        tie_word_embeddings=False))


def sequence(ids: np.ndarray) -> Sequence:
    """The target's recorded distribution at each position: all its mass on the sequence's next token."""
    gen = len(ids) - 1
    return Sequence(ids.astype(np.int64), 1, ids[1:].reshape(gen, 1).astype(np.int64), np.zeros((gen, 1), np.float32))


def settings(seconds: float) -> TrainSettings:
    return TrainSettings(budget_s=seconds, batch_size=16, lr=3e-3, warmup_steps=5, weight_decay=0.0,
                         eval_every_s=1e9, checkpoint_every_s=1e9)


def test_plain_draft_learns_a_rule(tmp_path):
    """Tokens that count up (x + 1 mod V) from a random start: the plain distillation learns the rule."""
    def seqs(first, n):
        return [sequence((np.random.default_rng(i).integers(0, VOCAB) + np.arange(LENGTH)) % VOCAB)
                for i in range(first, first + n)]
    draft = make_draft(tiny_target(), [0], list(range(VOCAB)), "test/target")
    train, val = seqs(0, 200), seqs(1000, 24)
    sub_index = torch.arange(VOCAB)
    before = validate(draft, val, sub_index)
    train_draft(draft, train, val, settings(10), str(tmp_path / "ckpt"), log=lambda line: None)
    after = validate(draft, val, sub_index)
    assert before["greedy_agreement"] < 0.2 and after["greedy_agreement"] > 0.8, (before, after)


def test_training_learns_to_read_the_features(tmp_path):
    """The training loop end to end on a planted task: random tokens, and a target 'feature' at
    p - 1 that encodes token p + 1. A plain draft cannot know p + 1; reading W g_(p-1) it can, so
    held-out agreement must rise from chance, through the same loss, masks and optimizer as the real run."""
    vocab, width, length = VOCAB, WIDTH, LENGTH
    draft = from_borrowed(make_draft(tiny_target(), [0], list(range(vocab)), "test/target"), steps=2)
    code = torch.randn(vocab, width).numpy()

    def example(seed: int) -> Example:
        ids = np.random.default_rng(seed).integers(0, vocab, length)
        feats = np.zeros((length, width), dtype=np.float16)
        feats[:-2] = code[ids[2:]]                         # f_t encodes token t + 2
        return Example(sequence(ids), feats)

    train, val = [example(i) for i in range(200)], [example(1000 + i) for i in range(24)]
    sub_index = torch.arange(vocab)
    before = validate_features(draft, val, sub_index, steps=2)
    train_feature_draft(draft, train, val, 2, settings(20), str(tmp_path / "ckpt"), log=lambda line: None)
    after = validate_features(draft, val, sub_index, steps=2)
    assert before["a1"] < 0.15 and after["a1"] > 0.5, (before, after)
    assert after["loss"] < before["loss"]


def test_smollm2_recipe_continues_an_exported_draft(tmp_path, monkeypatch):
    """`train-models --pair smollm2 --stage train --continue-from DIR`: the run starts from the exported
    draft (its layers and head), measures it first on the new validation shards, and says so on the card."""
    from specviz.training import smollm2_draft
    from specviz.training.distill_data import save_shard
    from specviz.training.onpolicy import Record

    class Tokenizer:
        eos_token_id = VOCAB - 1

        def save_pretrained(self, path):
            pass

    target = tiny_target()
    monkeypatch.setattr(smollm2_draft, "load_target", lambda device: (None, Tokenizer(), target))

    def records(first, n):     # the planted rule: each token is the previous one + 1 (mod V)
        out = []
        for i in range(first, first + n):
            ids = (np.random.default_rng(i).integers(0, VOCAB) + np.arange(LENGTH)) % VOCAB
            out.append(Record(ids[:1].tolist(), ids[1:].tolist(), ids[1:, None].astype(np.uint16),
                              np.zeros((LENGTH - 1, 1), np.float16), 0.0))
        return out

    def shards(folder, held_out, trained, **kw):     # one held-out shard and one trained on, by the store's split
        from specviz.training.shard_store import is_validation, sitting_id, store_name
        (folder / "onpolicy").mkdir(parents=True)
        (folder / "prompts.json").write_text(f'[["code", "{folder.name}"]]')
        names = [is_validation(store_name(sitting_id(folder), i)) for i in range(1000)]
        save_shard(folder / "onpolicy" / f"shard-{names.index(True):04d}.npz", held_out, **kw)
        save_shard(folder / "onpolicy" / f"shard-{names.index(False):04d}.npz", trained, **kw)

    work = tmp_path / "work"
    shards(work, records(1000, 24), records(0, 200), kind="code")
    head = list(range(0, VOCAB, 2)) + [VOCAB - 1]        # a head of its own, not the shards' most frequent tokens
    first = make_draft(target, [0], head, "test/target")
    with torch.no_grad():
        first.model.norm.weight.mul_(3.0)                # so it differs from a fresh cut of the target
    smollm2_draft.export(first, Tokenizer(), tmp_path / "first", {}, describe=lambda card: "first\n")
    from transformers import AutoModelForCausalLM
    from specviz.training.distill import head_index, read_shards
    from specviz.training.smollm2_draft import shard_split
    val = read_shards(shard_split(work)[1])
    shipped = AutoModelForCausalLM.from_pretrained(tmp_path / "first", dtype=torch.float32).borrow_from(target)
    fresh = make_draft(target, [0], head, "test/target")
    expected, fresh_loss = (validate(d, val, head_index(d))["loss"] for d in (shipped, fresh))
    assert abs(expected - fresh_loss) > 1e-3

    (work / f"head-{len(head)}.json").write_text("the folder's own head")   # a plain run's, left alone
    recipe = smollm2_draft.DraftRecipe(layers=[0, 1, 2], head_size=99, train_minutes=0.05, batch_size=16, lr=1e-4)
    card = smollm2_draft.train(tmp_path / "next", work, recipe, "cpu", lambda line: None,
                               continue_from=tmp_path / "first")
    assert (work / f"head-{len(head)}.json").read_text() == "the folder's own head"
    assert card["continued_from"] == str(tmp_path / "first")
    assert card["recipe"]["layers"] == [0] and card["recipe"]["head_size"] == len(head)
    assert card["held_out_start"]["loss"] == pytest.approx(expected, abs=1e-4) and card["training"]["steps"] > 0
    again = AutoModelForCausalLM.from_pretrained(tmp_path / "next").borrow_from(target)
    assert again.lm_head.token_ids.tolist() == sorted(head)
    assert again.config.num_hidden_layers == 1
    card_text = (tmp_path / "next" / "README.md").read_text()
    assert "distilled further starting from" in card_text and "before this run" in card_text
    assert "decoding temperatures: T = 0: 1 shard;" in card_text          # read from the shards themselves

    # Continuing another draft in the same folder starts from that draft, not from the first one's checkpoint.
    other = smollm2_draft.DraftRecipe(train_minutes=0.05, batch_size=16, lr=1e-4)
    card2 = smollm2_draft.train(tmp_path / "third", work, other, "cpu", lambda line: None,
                                continue_from=tmp_path / "next")
    assert card2["held_out_start"] and card2["continued_from"] == str(tmp_path / "next")

    # Joining another folder's shards (--also-work-dir): both folders' validation shards, the folders on the
    # card, and a checkpoint of its own, so a resume never mixes this data set's steps with the other's.
    more = tmp_path / "more"
    shards(more, records(2000, 24), records(3000, 50), kind="chat", precision="bf16")
    before = set(work.glob("*.ckpt"))
    card3 = smollm2_draft.train(tmp_path / "fourth", work, smollm2_draft.DraftRecipe(train_minutes=0.05, batch_size=16),
                                "cpu", lambda line: None, continue_from=tmp_path / "next", others=[more])
    assert card3["data"]["validation_sequences"] == 48 and card3["data"]["train_sequences"] == 250
    assert card3["data"]["shard_precisions"] == {"bf16": 1, "fp32": 1} and "gen_precision" not in card3["recipe"]
    assert card3["held_out_start"]                                   # a fresh start, not the joined-less resume
    assert [p.name for p in set(work.glob("*.ckpt")) - before] and all("-with-" in p.name for p in set(work.glob("*.ckpt")) - before)
    assert "with the shards of" in (tmp_path / "fourth" / "README.md").read_text()

    # A loss leaning on the argmax (--argmax-weight) is another run: a checkpoint of its own, and the card says so.
    before = set(work.glob("*.ckpt"))
    card4 = smollm2_draft.train(tmp_path / "fifth", work, smollm2_draft.DraftRecipe(train_minutes=0.05, batch_size=16,
                                                                                    argmax_weight=0.5),
                                "cpu", lambda line: None, continue_from=tmp_path / "next")
    assert card4["held_out_start"] and card4["recipe"]["argmax_weight"] == 0.5
    assert [p.name for p in set(work.glob("*.ckpt")) - before] and all("-argmax0.5" in p.name for p in set(work.glob("*.ckpt")) - before)
    assert "0.5 x the cross-entropy of the target's argmax" in (tmp_path / "fifth" / "README.md").read_text()

    # Growing (--grow-layers): the continued draft gets a second copy of the target's one layer appended, starting as the same
    # draft (the same held-out loss before training), and the exported folder loads with two layers.
    before = set(work.glob("*.ckpt"))
    card_grown = smollm2_draft.train(tmp_path / "grown", work, smollm2_draft.DraftRecipe(train_minutes=0.05, batch_size=16,
                                                                                        grow_layers=[0]),
                                     "cpu", lambda line: None, continue_from=tmp_path / "next")
    assert card_grown["recipe"]["layers"] == [0, 0] and card_grown["recipe"]["grow_layers"] == [0]
    assert card_grown["held_out_start"]["loss"] == pytest.approx(card2["held_out_start"]["loss"], abs=1e-5)
    new_ckpts = set(work.glob("*.ckpt")) - before
    assert new_ckpts and all("layers-0-0-" in p.name for p in new_ckpts)
    grown = AutoModelForCausalLM.from_pretrained(tmp_path / "grown").borrow_from(target)
    assert grown.config.num_hidden_layers == 2
    from specviz.errors import ConfigError
    with pytest.raises(ConfigError, match="layers are 0 to 0"):         # the tiny target has one layer
        smollm2_draft.train(tmp_path / "never", work, smollm2_draft.DraftRecipe(grow_layers=[5]), "cpu",
                            lambda line: None, continue_from=tmp_path / "next")

    # The committed store: a fresh work folder with no shards of its own trains on the store's, restored by
    # teacher forcing, and the card names the store's shards and sittings.
    store = tmp_path / "store"
    (tmp_path / "fresh").mkdir()
    assert smollm2_draft.keep(more, store, smollm2_draft.DraftRecipe(seed=4), lambda line: None)["kept"] == 2
    card5 = smollm2_draft.train(tmp_path / "sixth", tmp_path / "fresh", smollm2_draft.DraftRecipe(train_minutes=0.05,
                                batch_size=16), "cpu", lambda line: None, continue_from=tmp_path / "next", store=store)
    assert card5["data"]["store"]["restored"] == 2 and card5["data"]["train_sequences"] == 50
    assert card5["data"]["validation_sequences"] == 24 and card5["data"]["store"]["train_tokens"] == 50 * (LENGTH - 1)
    assert len(list((tmp_path / "fresh" / "restored").glob("*.npz"))) == 2
    assert "from the committed store" in (tmp_path / "sixth" / "README.md").read_text()


def test_keep_best_ends_with_the_best_validated_weights(tmp_path):
    """train_steps(keep_best=...) ends with the weights of its best validation, not its last step's,
    and a resumed run remembers that best."""
    import time
    from specviz.training.trainer import train_steps
    model = torch.nn.Linear(1, 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    seen = []                                              # (metric, weight) at each validation

    def step_loss(gen):
        time.sleep(0.02)
        return -model.weight.sum(), {"tokens": 1}          # every step moves the weight up

    def validate():
        w = float(model.weight.detach())
        seen.append((-abs(len(seen) - 2), w))              # peaks at the third validation
        return {"agreement": seen[-1][0]}

    quick = TrainSettings(budget_s=0.5, batch_size=1, lr=0.1, warmup_steps=1, weight_decay=0.0,
                          eval_every_s=0.0, checkpoint_every_s=1e9)
    out = train_steps(model, [model.weight], [{"params": [model.weight], "lr_scale": 1.0}], quick,
                      str(tmp_path / "ckpt"), step_loss, validate, log=lambda line: None, keep_best="agreement")
    assert len(seen) >= 4 and out["kept_step"] == 3 < out["steps"]
    assert float(model.weight.detach()) == seen[2][1] != seen[-1][1]
    saved = torch.load(tmp_path / "ckpt", weights_only=False)["best"]
    assert saved["step"] == 3 and saved["value"] == 0
