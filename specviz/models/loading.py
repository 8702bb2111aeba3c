"""load_pair: target (and draft) from a hub id or a local folder, ready for the engine.

Everything goes through `AutoModelForCausalLM` / `AutoTokenizer.from_pretrained`, with
`trust_remote_code` never enabled. Device "auto" picks CUDA, then MPS, then CPU; dtype
"auto" is bfloat16 on CUDA and float32 elsewhere (the bundled fp16 weights are upcast).
With more than one GPU the target loads with accelerate's device_map="auto", so a target
larger than one GPU spreads over them. Every failure becomes a one-line LoadError. A folder with
recorded sha256 sums (the shipped models' assets/models/SHA256SUMS, a fetched model's marker) is
checked against them first (integrity.py): flipped bytes in a safetensors file would load silently.

A hub id that `python -m specviz fetch` has converted (fetch.py) loads from its folder in
SPECVIZ_HOME, offline; a draft saved as `BorrowedDraftForCausalLM` gets its target's
embedding and output rows here. On a CPU with MKL, fp32 linears get a packed layout for
multi-token passes (packed_linear.py): same weights, faster verify passes, in both lanes.
"""
from __future__ import annotations

import os
import re
import threading
from dataclasses import replace
from pathlib import Path

import torch

from ..runtime.pair import ModelPair
from ..errors import LoadError
from ..hosting_env import zerogpu_space
from ..paths import MODELS
from . import borrowed_draft  # noqa: F401 - registers the borrowed-weights draft with the Auto classes
from . import feature_draft  # noqa: F401 - and the feature draft (a borrowed draft that reads target features)
from .fetch import FETCHABLE, fetch_hint, fetched
from .hub_reach import offline_kwargs
from .integrity import verify
from ..runtime.packed_linear import pack_linears

BUNDLED_TARGET, BUNDLED_DRAFT = str(MODELS / "target"), str(MODELS / "draft")
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# transformers builds a model on the meta device and then fills in its weights, through state that
# is not per thread: two models built at once in two threads (two pairs loading for two visitors)
# can each end up with tensors left on the meta device ("Cannot copy out of meta tensor", or a
# weight silently "newly initialized"). One model is built at a time; reading files from the Hub
# or a folder before that (snapshot_download, the tokenizer) still runs side by side.
_BUILD = threading.Lock()


def _mps_available() -> bool:
    return getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()


def pick_device(device: str = "auto") -> torch.device:
    """With "auto": a CUDA GPU, else Apple's MPS, else the CPU. A named device must exist here (a LoadError says
    what is available otherwise, before any model is read)."""
    if device != "auto":
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError):
            raise LoadError(f"unknown device {device!r}: use auto, cpu, cuda, cuda:N or mps") from None
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise LoadError(f"device {device!r}: this torch ({torch.__version__}) sees no CUDA GPU here; use cpu or auto")
        if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
            raise LoadError(f"device {device!r}: this machine has {torch.cuda.device_count()} CUDA GPU(s), "
                            f"numbered from 0")
        if dev.type == "mps" and not _mps_available():
            raise LoadError(f"device {device!r}: Apple's MPS is not available here; use cpu or auto")
        if dev.type not in ("cpu", "cuda", "mps"):
            raise LoadError(f"device {device!r}: specviz runs on cpu, cuda or mps")
        return dev
    if torch.cuda.is_available():
        return torch.device("cuda")
    if _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def pick_dtype(dtype: str, device: torch.device) -> torch.dtype:
    if dtype == "auto":
        if device.type != "cuda":
            return torch.float32
        # ZeroGPU's GPUs (H200 slices) have bf16, and asking would initialize CUDA where it must not;
        # older GPUs without bf16 (T4, V100) get fp16.
        return torch.bfloat16 if zerogpu_space() or torch.cuda.is_bf16_supported() else torch.float16
    if dtype not in DTYPES:
        raise LoadError(f"dtype must be auto, {', '.join(DTYPES)}; not {dtype!r}")
    return DTYPES[dtype]


def is_local(name: str) -> bool:
    return os.path.isabs(name) or name.startswith((".", "~")) or os.path.exists(name)


def resolve(name: str) -> str:
    """The folder to load for `name`: itself, or the fetched copy of a fetchable hub id."""
    if not is_local(name) and (folder := fetched(name)) is not None:
        return str(folder)
    return os.path.expanduser(name)


def hub_kwargs(name: str) -> dict:
    """from_pretrained's extra arguments for `name`: a hub id (not a folder, not fetched) loads from the
    local cache only when the Hub cannot be reached (hub_reach.py), instead of retrying for a minute."""
    return {} if is_local(name) or fetched(name) is not None else offline_kwargs()


def _check_name(name: str) -> None:
    if is_local(name):
        if not os.path.isdir(os.path.expanduser(name)):
            raise LoadError(f"no model folder at {name!r}")
    elif not HUB_ID.match(name):
        raise LoadError(f"{name!r} is neither a local folder nor a Hugging Face Hub id (owner/name)")


def load_tokenizer(name: str):
    from transformers import AutoTokenizer
    _check_name(name)
    try:
        return AutoTokenizer.from_pretrained(resolve(name), trust_remote_code=False, **hub_kwargs(name))
    except Exception as err:  # noqa: BLE001 - every failure becomes one readable line
        raise LoadError(_explain(name, "tokenizer", err)) from err


def load_model(name: str, device: torch.device, dtype: torch.dtype, spread: bool = False):
    from transformers import AutoModelForCausalLM
    _check_name(name)
    verify(resolve(name), Path(name).name if is_local(name) else name)    # recorded sums (integrity.py)
    kwargs = {"dtype": dtype, "trust_remote_code": False, **hub_kwargs(name)}
    if spread:
        kwargs["device_map"] = "auto"
    try:
        with _BUILD:
            model = AutoModelForCausalLM.from_pretrained(resolve(name), **kwargs)
            if not spread:
                model = model.to(device)
    except torch.OutOfMemoryError as err:
        raise LoadError(f"out of memory while loading {name!r} on {device}: pick a smaller model",
                        transient=True) from err
    except (OSError, ValueError, KeyError, ImportError) as err:      # the files or the Hub's answer
        raise LoadError(_explain(name, "model", err)) from err
    except Exception as err:  # noqa: BLE001 - anything else: a state of this process, not of the model
        raise LoadError(_explain(name, "model", err), transient=True) from err
    return model.eval()


def _explain(name: str, what: str, err: Exception) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    if "Unrecognized configuration class" in str(err) or "does not appear to have" in str(err) and what == "model":
        return f"{name!r} is not a causal language model that transformers can load ({text[:160]})"
    if name in FETCHABLE and fetched(name) is None:
        return f"{name!r} is not on this machine yet: {fetch_hint(name)}"
    if not is_local(name) and isinstance(err, OSError):
        return f"could not load the {what} {name!r}: it is not a local folder, and {_hub_reason(err)}"
    return f"could not load the {what} {name!r}: {text[:200]}"


def _hub_reason(err: BaseException) -> str:
    """Which of the Hub's answers it was: gated, missing or private, or no answer at all."""
    chain, seen = [], err
    while seen is not None and len(chain) < 8:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    names = {type(e).__name__ for e in chain}
    text = " ".join(str(e) for e in chain).lower()
    if "GatedRepoError" in names or "gated repo" in text:
        return "it is a gated repository: accept its terms on huggingface.co and log in (HF_TOKEN)"
    if ("RepositoryNotFoundError" in names or "not a valid model identifier" in text or "401" in text
            or "repository not found" in text):
        return "the Hugging Face Hub has no such public repository (a typo, or a private one that needs a token)"
    return "the Hugging Face Hub could not be reached (this machine looks offline)"


def _vocab_fingerprint(tokenizer) -> tuple:
    vocab = tokenizer.get_vocab()
    return len(vocab), hash(frozenset(vocab.items()))


def load_pair(target: str | None = None, draft: str | None = None, device: str = "auto",
              dtype: str = "auto", hub_only: bool = False) -> ModelPair:
    """Load target and draft (hub ids or folders). target=None: the bundled pair (and its draft).
    hub_only: both are hub ids, looked up on the Hub (or fetched), never as a folder of this machine
    whatever their name (a web visitor's own ids: "assets/models" is no way into the server's files)."""
    if hub_only:
        names = (target, draft)
        target, draft = _from_hub(target, "target"), _from_hub(draft, "draft") if draft else None
        pair = load_pair(target, draft, device, dtype)
        return replace(pair, target_name=names[0], draft_name=names[1] or "none")
    if target is None:
        if not Path(BUNDLED_TARGET, "config.json").exists():
            raise LoadError("the bundled models are missing from assets/models: run `python -m specviz train-models`")
        target, draft = BUNDLED_TARGET, draft or BUNDLED_DRAFT
    dev = pick_device(device)
    dt = pick_dtype(dtype, dev)
    tokenizer = load_tokenizer(target)
    target_model = load_model(target, dev, dt, spread=dev.type == "cuda" and not zerogpu_space()
                              and torch.cuda.device_count() > 1)
    draft_model = None
    vocab = output_rows(target_model)
    if draft is not None:
        draft_model = _load_draft(draft, tokenizer, target_model, target, dev, dt)
        # Vocabularies that differ only by padding rows (Qwen2.5 0.5B vs 7B) work on the shared part.
        vocab = min(vocab, output_rows(draft_model))
        if vocab < len(tokenizer):
            raise LoadError(f"{draft!r} has fewer output rows ({vocab}) than the tokenizer has tokens ({len(tokenizer)})")
    for model in (target_model, draft_model):      # fp32 CPU linears only; nothing elsewhere or without MKL
        if model is not None:
            pack_linears(model)
    return make_pair(target_model, draft_model, tokenizer, vocab, target, draft)


HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "*.jinja"]   # what a model and its tokenizer read


def _from_hub(name, what: str) -> str:
    """The local copy of hub id `name`: fetched, or downloaded (cached) from the Hub; never a local folder."""
    if not isinstance(name, str) or not HUB_ID.match(name):
        raise LoadError(f"the {what} must be a Hugging Face Hub id such as owner/name")
    if (folder := fetched(name)) is not None:
        return str(folder)
    from huggingface_hub import snapshot_download
    try:
        return snapshot_download(name, allow_patterns=HUB_FILES, **offline_kwargs())
    except Exception as err:  # noqa: BLE001 - every failure becomes one readable line
        raise LoadError(f"could not load the {what} {name!r}: {_hub_reason(err)}") from None


def _load_draft(draft: str, tokenizer, target_model, target: str, dev: torch.device, dt: torch.dtype):
    """A draft model checked against the target's tokenizer, with the target's tensors attached if it borrows them."""
    if _vocab_fingerprint(load_tokenizer(draft)) != _vocab_fingerprint(tokenizer):
        raise LoadError(f"the tokenizers of {target!r} and {draft!r} differ: a draft must share its target's tokenizer")
    model = load_model(draft, dev, dt)
    if isinstance(model, borrowed_draft.BorrowedDraftForCausalLM):
        model.borrow_from(target_model)
    return model


def load_draft_for(pair: ModelPair, draft: str):
    """Another draft model (hub id or folder) for an already loaded pair, on its device and dtype.
    The benchmark gives it to transformers' assisted generation when the pair's own draft reads
    target features."""
    model = _load_draft(draft, pair.tokenizer, pair.target, pair.target_name, pair.device, pair.target.dtype)
    pack_linears(model)
    model.name_or_path = _short(draft)
    return model


def output_rows(model) -> int:
    """The number of output logits (vocabulary rows) of a causal LM."""
    head = model.get_output_embeddings()
    return getattr(head, "out_features", None) or head.weight.shape[0]


def make_pair(target_model, draft_model, tokenizer, vocab_size: int, target_name: str = "target",
              draft_name: str | None = "draft") -> ModelPair:
    """A ModelPair from already-loaded models (also used by tests)."""
    eos = target_model.generation_config.eos_token_id if target_model.generation_config else None
    eos = eos if eos is not None else tokenizer.eos_token_id
    eos_ids = frozenset([eos] if isinstance(eos, int) else (eos or []))
    limits = [m.config.max_position_embeddings for m in (target_model, draft_model)
              if m is not None and getattr(m.config, "max_position_embeddings", None)]
    return ModelPair(target=target_model, draft=draft_model, tokenizer=tokenizer, vocab_size=vocab_size,
                     device=target_model.get_input_embeddings().weight.device,
                     max_positions=min(limits) if limits else 2048, eos_token_ids=eos_ids,
                     target_name=_short(target_name), draft_name=_short(draft_name) if draft_name else "none")


def _short(name: str) -> str:
    """A display name that shows no server path (the folder's last two parts)."""
    return "/".join(Path(name).parts[-2:]) if is_local(name) else name
