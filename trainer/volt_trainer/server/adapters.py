"""LoRA adapters on the shared base model, via peft, keyed by served name.

Each loaded adapter gets an internal peft name ``<name>@<content hash>``; the served name points at
one of them. ``load_inplace`` loads the new version under a new internal name and repoints the
served name, so requests already running finish on the version they started with; an internal
adapter is deleted once nothing runs on it. All methods run on the engine's scheduler thread.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from peft import PeftModel
from peft.tuners.lora import LoraLayer

from .errors import ApiError


@dataclass(frozen=True)
class AdapterVersion:
    name: str
    version: str  # first 12 hex chars of sha256(adapter_model.safetensors)
    path: str

    @property
    def internal(self) -> str:
        return f"{self.name}@{self.version}"


def adapter_hash(directory: Path) -> str:
    digest = hashlib.sha256()
    with open(directory / "adapter_model.safetensors", "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:12]


def check_adapter_dir(lora_path: str) -> Path:
    directory = Path(lora_path)
    for required in ("adapter_config.json", "adapter_model.safetensors"):
        if not (directory / required).is_file():
            raise ApiError(400, f"lora_path: {lora_path!r} has no {required}", param="lora_path")
    return directory


class AdapterSet:
    def __init__(self, base) -> None:
        self.base = base
        self.peft: PeftModel | None = None
        self.served: dict[str, AdapterVersion] = {}
        self._loaded: set[str] = set()  # internal names present in peft

    def get(self, name: str) -> AdapterVersion | None:
        return self.served.get(name)

    def loaded(self) -> set[str]:
        """Internal names of the adapter versions present in peft (what cached KV may belong to)."""
        return set(self._loaded)

    def load(self, name: str, lora_path: str, inplace: bool) -> AdapterVersion:
        if name in self.served and not inplace:
            raise ApiError(400, f"lora_name: adapter {name!r} is already loaded (use load_inplace)", param="lora_name")
        directory = check_adapter_dir(lora_path)
        version = AdapterVersion(name, adapter_hash(directory), str(directory))
        if version.internal not in self._loaded:
            try:
                if self.peft is None:
                    self.peft = PeftModel.from_pretrained(self.base, str(directory), adapter_name=version.internal)
                else:
                    self.peft.load_adapter(str(directory), adapter_name=version.internal)
            except Exception as exc:  # peft raises many types for incompatible adapters
                raise ApiError(400, f"lora_path: cannot load adapter: {exc}", param="lora_path") from exc
            self.peft.eval()
            self._loaded.add(version.internal)
        self.served[name] = version
        return version

    def unload(self, name: str) -> AdapterVersion:
        version = self.served.pop(name, None)
        if version is None:
            raise ApiError(404, f"lora_name: adapter {name!r} is not loaded", param="lora_name", code="model_not_found")
        return version

    def collect(self, busy: set[str]) -> None:
        """Delete internal adapters no served name points at and no running sequence uses."""
        wanted = {v.internal for v in self.served.values()} | busy
        stale = sorted(self._loaded - wanted)
        if not stale:
            return
        assert self.peft is not None
        if not wanted & self._loaded:
            # peft cannot delete its last adapter cleanly: strip all LoRA layers and serve the plain base again.
            self.base = self.peft.unload()
            self.peft = None
            self._loaded.clear()
            return
        for internal in stale:
            self.peft.delete_adapter(internal)
            self._loaded.discard(internal)

    def forward(self, internal: str | None, **inputs):
        """Run the model with one adapter active (None = the base model)."""
        if self.peft is None:
            return self.base(**inputs)
        if internal is None:
            with self.peft.disable_adapter():
                return self.peft(**inputs)
        self.peft.set_adapter(internal)
        return self.peft(**inputs)

    @contextmanager
    def mixed(self, rows: list[str | None]):
        """The base causal LM with its own adapter for each row of a packed forward (None = the base model).

        peft's mixed-adapter batches (``adapter_names``, one per row): every LoRA layer runs its base linear on all
        rows once and adds each adapter's low-rank update to that adapter's rows alone, so requests for several
        adapters share one read of the base weights. Passed to the LoRA layers by forward pre-hooks, removed after.
        """
        if self.peft is None:
            yield self.base
            return
        names = [row if row is not None else "__base__" for row in rows]
        handles = [
            module.register_forward_pre_hook(partial(_with_adapter_names, names), with_kwargs=True)
            for module in self.peft.modules()
            if isinstance(module, LoraLayer)
        ]
        try:
            yield self.base
        finally:
            for handle in handles:
                handle.remove()

    @contextmanager
    def active(self, internal: str | None):
        """The base causal LM with one adapter active (None = the base model), for forwards that call its modules."""
        if self.peft is None:
            yield self.base
        elif internal is None:
            with self.peft.disable_adapter():
                yield self.base
        else:
            self.peft.set_adapter(internal)
            yield self.base


def _with_adapter_names(names: list[str], _module, args, kwargs):
    return args, {**kwargs, "adapter_names": names}
