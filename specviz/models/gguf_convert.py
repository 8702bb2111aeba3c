"""GGUF file -> an ordinary Hugging Face model folder (config, safetensors, tokenizer, chat template).

transformers reads a GGUF file with the `gguf` package (`from_pretrained(folder, gguf_file=...)`),
dequantizing every tensor; the model it returns refuses `save_pretrained` (it is marked as
quantized). Its state dict, however, loads strictly into a fresh model of the same class built
from the same config without the quantization entry, and that model saves like any other.
After this, nothing in specviz knows the weights came from a GGUF file.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import torch


def convert_gguf(gguf_path: Path, out_dir: Path, name: str, dtype: torch.dtype = torch.bfloat16) -> None:
    """Write the model and tokenizer of `gguf_path` to `out_dir` (created; replaced if present).

    name: what the folder's config records as its origin (a hub id). dtype: the stored weights'
    type (bf16 halves the folder; loaders upcast to fp32 on a CPU).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    folder, file = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=file)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config          # the weights are plain tensors from here on
    config.name_or_path = name
    if hasattr(config, "_model_name_or_path"):
        config._model_name_or_path = name        # GGUF's general.name: the model's build label
    fresh = type(loaded)(config)
    fresh.load_state_dict(loaded.state_dict(), strict=True)   # every tensor, or an error
    fresh.generation_config = GenerationConfig.from_model_config(config)
    tmp = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    fresh.to(dtype).save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)                          # the folder appears whole or not at all
