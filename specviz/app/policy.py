"""What a run may ask for: local use, or hosted mode for a public Space (SPECVIZ_HOSTED=1).

Local use (the default) allows any hub id and any local folder, unless SPECVIZ_MODEL_DIRS names the folders
models may be loaded from. Hosted mode adds:
- a model allowlist: the offline model, the preset pairs, and the ids in SPECVIZ_ALLOWED_MODELS;
- caps on the prompt's length, max new tokens and γ (SPECVIZ_MAX_PROMPT_CHARS, SPECVIZ_MAX_NEW_TOKENS,
  SPECVIZ_MAX_GAMMA);
- no local paths at all, except inside the folders SPECVIZ_MODEL_DIRS names.

Settings are read from the environment when asked for (never at import), so tests and servers can set them.
Every refusal is a ValueError with one sentence a user can act on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from specviz.config import (
    BUILT_IN_DRAFTERS,
    MAX_GAMMA,
    MAX_NEW_TOKENS,
    MAX_PROMPT_CHARS,
    OFFLINE_MODEL,
    DecodeConfig,
    check_prompt,
)
from specviz.models.loading import PRESETS, looks_like_path  # the preset pairs are what a hosted server offers

HOSTED_PROMPT_CHARS, HOSTED_NEW_TOKENS, HOSTED_GAMMA = 4000, 256, 8  # hosted defaults: a shared CPU stays responsive


@dataclass(frozen=True)
class Policy:
    hosted: bool = False
    allowed_models: frozenset[str] = frozenset()  # hosted mode: ids that may be loaded (folders are checked apart)
    model_dirs: tuple[Path, ...] = ()  # folders local models may come from; empty: anywhere locally, none hosted
    max_prompt_chars: int = MAX_PROMPT_CHARS
    max_new_tokens: int = MAX_NEW_TOKENS
    max_gamma: int = MAX_GAMMA

    def check(self, config: DecodeConfig, prompt: str) -> None:
        """Raise ValueError if this run is not allowed here: the prompt, the caps, then each model."""
        check_prompt(prompt, self.max_prompt_chars)
        if config.max_new_tokens > self.max_new_tokens:
            raise ValueError(f"max new tokens is capped at {self.max_new_tokens} here, got {config.max_new_tokens}")
        if config.gamma > self.max_gamma:
            raise ValueError(f"γ is capped at {self.max_gamma} here, got {config.gamma}")
        for role, model_id in (("target", config.target), ("draft", config.drafting_model)):
            self.check_model(role, model_id)

    def check_model(self, role: str, model_id: str) -> None:
        if model_id == OFFLINE_MODEL or model_id in BUILT_IN_DRAFTERS:  # shipped with specviz
            return
        if looks_like_path(model_id):
            self._check_folder(role, model_id)
        elif self.hosted and model_id not in self.allowed_models:
            raise ValueError(f"the {role} model {model_id!r} is not offered here; this server allows: "
                             f"{', '.join(sorted(self.allowed_models))}")

    def _check_folder(self, role: str, model_id: str) -> None:
        if not self.model_dirs:
            if self.hosted:
                raise ValueError(f"the {role} model {model_id!r} is a local path, and this server loads no local paths")
            return
        resolved = Path(model_id).expanduser().resolve()  # symlinks and '..' resolved before the check
        if not any(resolved == root or root in resolved.parents for root in self.model_dirs):
            raise ValueError(f"the {role} model folder {model_id!r} is outside the allowed folders "
                             f"({', '.join(str(root) for root in self.model_dirs)})")


def current_policy() -> Policy:
    """The policy the environment asks for, read now."""
    hosted = os.environ.get("SPECVIZ_HOSTED", "").lower() in ("1", "true", "yes")
    dirs = tuple(Path(entry).expanduser().resolve() for entry in os.environ.get("SPECVIZ_MODEL_DIRS", "").split(os.pathsep)
                 if entry.strip())
    if not hosted:
        return Policy(model_dirs=dirs)
    preset_ids = {model for pair in PRESETS.values() for model in pair}
    extra = {entry.strip() for entry in os.environ.get("SPECVIZ_ALLOWED_MODELS", "").split(",") if entry.strip()}
    return Policy(
        hosted=True,
        allowed_models=frozenset(preset_ids | extra),
        model_dirs=dirs,
        max_prompt_chars=_env_int("SPECVIZ_MAX_PROMPT_CHARS", HOSTED_PROMPT_CHARS, MAX_PROMPT_CHARS),
        max_new_tokens=_env_int("SPECVIZ_MAX_NEW_TOKENS", HOSTED_NEW_TOKENS, MAX_NEW_TOKENS),
        max_gamma=_env_int("SPECVIZ_MAX_GAMMA", HOSTED_GAMMA, MAX_GAMMA),
    )


def _env_int(name: str, default: int, ceiling: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= ceiling:
        raise ValueError(f"{name} must be a whole number from 1 to {ceiling}, got {raw!r}")
    return int(raw)


def gpu_decorator():
    """ZeroGPU's `spaces.GPU` when the `spaces` package is installed (on a Space), else a no-op decorator."""
    try:
        import spaces  # only on Hugging Face Spaces
    except ImportError:
        return lambda function: function
    return spaces.GPU
