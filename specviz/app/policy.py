"""What a run may ask for: local use, or hosted mode for a public Space (SPECVIZ_HOSTED=1); and where the app
listens (`listen_host`): 127.0.0.1 unless told otherwise.

Local use (the default) allows any hub id, and local folders inside one models directory only:
SPECVIZ_MODELS_DIR, by default the specviz cache (~/.cache/specviz, which SPECVIZ_CACHE moves). Any other path
gets the same sentence whether or not it exists, and nothing is looked up on disk to decide, so a visitor cannot
probe the server's files. (The command line is a local tool and takes any folder.) Hosted mode adds:
- a model allowlist: the offline model, the preset pairs, and the ids in SPECVIZ_ALLOWED_MODELS;
- caps on the prompt's length, max new tokens and γ (SPECVIZ_MAX_PROMPT_CHARS, SPECVIZ_MAX_NEW_TOKENS,
  SPECVIZ_MAX_GAMMA);
- no local paths at all, unless SPECVIZ_MODELS_DIR is set (then folders inside it only).

The teacher's lane (teacher.py) opens with SPECVIZ_TEACHER_KEY: `teacher_key` reads it, `is_teacher_key` checks
what a visitor typed against it.

Settings are read from the environment when asked for (never at import), so tests and servers can set them.
Every refusal is a ValueError with one sentence a user can act on.
"""

from __future__ import annotations

import hmac
import os
import re
from dataclasses import dataclass
from pathlib import Path

from specviz.config import (
    BUILT_IN_DRAFTERS,
    MAX_GAMMA,
    MAX_NEW_TOKENS,
    MAX_PROMPT_CHARS,
    OFFLINE_MODEL,
    DecodeConfig,
    DrafterSpec,
    check_prompt,
)
from specviz.models import split_gguf
from specviz.models.offline import cache_root
from specviz.models.presets import PAIRS  # the preset pairs are what a hosted server offers
from specviz.models.requantize import split_variant
from specviz.models.split_gguf import SPLIT_MODELS

HOSTED_PROMPT_CHARS, HOSTED_NEW_TOKENS, HOSTED_GAMMA = 4000, 256, 8  # hosted defaults: a shared CPU stays responsive
TEACHER_KEY_MIN_CHARS = 12  # secrets.token_urlsafe(12) gives 16 characters, 96 random bits
# A hub id as the hub spells one, 'name' or 'org/name'; anything else is a path. Decided from the text alone.
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})?")


@dataclass(frozen=True)
class Policy:
    hosted: bool = False
    allowed_models: frozenset[str] = frozenset()  # hosted mode: ids that may be loaded (folders are checked apart)
    models_dir: Path | None = None  # the one folder local models may come from (resolved); None: no local paths
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
        self.check_model("target", config.target)
        if config.drafter.model is not None:  # a built-in drafter loads no model of its own
            self.check_model("draft", config.drafter.model)

    def check_model(self, role: str, model_id: str) -> None:
        model_id = split_variant(model_id)[0]  # "…@Q4_0" is that model's GGUF requantized: the model decides
        if model_id == OFFLINE_MODEL or model_id in SPLIT_MODELS or model_id in BUILT_IN_DRAFTERS:  # offline, by name
            return
        if not is_hub_id(model_id):
            self._check_folder(role, model_id)
        elif self.hosted and model_id not in self.allowed_models:
            raise ValueError(f"the {role} model {model_id!r} is not offered here; this server allows: "
                             f"{', '.join(sorted(self.allowed_models))}")

    def _check_folder(self, role: str, model_id: str) -> None:
        """Allow a folder inside models_dir, judged by where it points once '..' and symlinks are resolved. Every
        other path gets one sentence, whether or not it exists: the decision never asks whether it does."""
        if self.models_dir is None:
            raise ValueError(f"the {role} model {model_id!r} is a local path, and this server loads no local paths")
        try:
            resolved = Path(model_id).expanduser().resolve()
        except (OSError, RuntimeError, ValueError):  # a symlink loop, an unknown ~user, a NUL: refused like the rest
            resolved = None
        if resolved is None or (resolved != self.models_dir and self.models_dir not in resolved.parents):
            where = "" if self.hosted else f" ({self.models_dir}; SPECVIZ_MODELS_DIR moves it)"
            raise ValueError(f"the {role} model {model_id!r} is neither a hub id nor a folder inside the models "
                             f"directory{where}")


def is_hub_id(model_id: str) -> bool:
    """Whether `model_id` reads as a hub id ('gpt2', 'org/name') rather than a path ('./x', '/x', '~/x', 'a/b/c').

    >>> [is_hub_id(text) for text in ("gpt2", "Qwen/Qwen2.5-0.5B", "/etc", "../x", "a/b/c", "~/m", "a/..")]
    [True, True, False, False, False, False, False]
    """
    return bool(_HUB_ID.fullmatch(model_id)) and ".." not in model_id


def models_dir() -> Path:
    """The folder the app loads local models from: SPECVIZ_MODELS_DIR, else the specviz cache (resolved)."""
    return Path(os.environ.get("SPECVIZ_MODELS_DIR", "").strip() or cache_root()).expanduser().resolve()


def listen_host(host: str | None = None, environ=os.environ) -> str:
    """Where `python app.py` listens: --host, else GRADIO_SERVER_NAME, else every interface on a Hugging Face
    Space (SPACE_ID is set there), else 127.0.0.1, this machine only."""
    if host:
        return host
    if environ.get("GRADIO_SERVER_NAME", "").strip():
        return environ["GRADIO_SERVER_NAME"].strip()
    return "0.0.0.0" if environ.get("SPACE_ID") else "127.0.0.1"


def current_policy() -> Policy:
    """The policy the environment asks for, read now."""
    hosted = os.environ.get("SPECVIZ_HOSTED", "").lower() in ("1", "true", "yes")
    if not hosted:
        return Policy(models_dir=models_dir())
    extra = {entry.strip() for entry in os.environ.get("SPECVIZ_ALLOWED_MODELS", "").split(",") if entry.strip()}
    return Policy(
        hosted=True,
        allowed_models=frozenset(offered_models() | extra),
        models_dir=models_dir() if os.environ.get("SPECVIZ_MODELS_DIR", "").strip() else None,
        max_prompt_chars=_env_int("SPECVIZ_MAX_PROMPT_CHARS", HOSTED_PROMPT_CHARS, MAX_PROMPT_CHARS),
        max_new_tokens=_env_int("SPECVIZ_MAX_NEW_TOKENS", HOSTED_NEW_TOKENS, MAX_NEW_TOKENS),
        max_gamma=_env_int("SPECVIZ_MAX_GAMMA", HOSTED_GAMMA, MAX_GAMMA),
    )


def offered_models() -> set[str]:
    """The preset pairs' models that this server can load by name: hub ids, and the offline models whose files are
    installed (drafters such as "ngram+int4" are no models, and a split model without its parts loads nothing)."""
    models = {pair.target for pair in PAIRS} | {DrafterSpec.parse(pair.draft).model for pair in PAIRS}
    return {model for model in models
            if model is not None and (model not in SPLIT_MODELS or split_gguf.available(SPLIT_MODELS[model]))}


def _env_int(name: str, default: int, ceiling: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= ceiling:
        raise ValueError(f"{name} must be a whole number from 1 to {ceiling}, got {raw!r}")
    return int(raw)


def teacher_key(environ=os.environ) -> str | None:
    """SPECVIZ_TEACHER_KEY, or None when it is unset or empty (then there is no teacher's lane at all). A key shorter
    than TEACHER_KEY_MIN_CHARS is refused at start: the lane is only as private as its key is hard to guess."""
    key = environ.get("SPECVIZ_TEACHER_KEY", "").strip()
    if not key:
        return None
    if len(key) < TEACHER_KEY_MIN_CHARS:
        raise ValueError(f"SPECVIZ_TEACHER_KEY must be at least {TEACHER_KEY_MIN_CHARS} characters; make one with "
                         "python -c 'import secrets; print(secrets.token_urlsafe(12))'")
    return key


def is_teacher_key(given, environ=os.environ) -> bool:
    """Whether `given` (what a visitor typed) is the teacher key. False when the server has none, for anything that
    is not text, and for every wrong key; compared in constant time, so the answer's timing tells nothing.

    >>> env = {"SPECVIZ_TEACHER_KEY": "correct-horse-battery"}
    >>> [is_teacher_key(text, env) for text in ("correct-horse-battery", " correct-horse-battery ", "correct", "", None)]
    [True, True, False, False, False]
    >>> is_teacher_key("anything", {})
    False
    """
    key = teacher_key(environ)
    if key is None or not isinstance(given, str):
        return False
    return hmac.compare_digest(given.strip().encode("utf-8"), key.encode("utf-8"))


def gpu_decorator():
    """ZeroGPU's `spaces.GPU` when the `spaces` package is installed (on a Space), else a no-op decorator."""
    try:
        import spaces  # only on Hugging Face Spaces
    except ImportError:
        return lambda function: function
    return spaces.GPU
