"""What every tab's callbacks share: requests to configs, pipelines loaded on the model thread, and errors
translated into gr.Error sentences a user can act on (the server goes on serving)."""

from __future__ import annotations

import functools

import gradio as gr

from specviz.app import worker
from specviz.app.policy import current_policy
from specviz.app.request import RunRequest
from specviz.config import DecodeConfig
from specviz.models import loading as models
from specviz.pipeline import Pipeline, build_pipeline


def make_config(request: RunRequest) -> DecodeConfig:
    """The request as a validated DecodeConfig that this server allows, or gr.Error with a clear sentence."""
    policy = current_policy()
    try:
        return request.to_config(policy)
    except ValueError as error:
        raise gr.Error(str(error)) from error


def load_pipeline(config: DecodeConfig) -> Pipeline:
    """The pipeline for `config`, built on the model thread; loading failures become gr.Error."""
    try:
        return worker.call(build_pipeline, config)
    except Exception as error:
        raise pipeline_error(error) from error


def pipeline_error(error: Exception) -> gr.Error:
    """What to tell the user when loading failed: the loader's own sentence, or advice (out of memory)."""
    if isinstance(error, (models.ModelUnavailable, models.IncompatibleModels, ValueError)):
        return gr.Error(str(error), print_exception=False)
    return gr.Error(friendly_message(error))  # out of memory while loading, among others


def friendly_message(error: Exception) -> str:
    """One sentence for an unexpected failure; running out of memory gets advice (and frees CUDA's cache)."""
    import torch

    if isinstance(error, torch.OutOfMemoryError):
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return "The GPU ran out of memory: try a smaller pair, fewer new tokens or a smaller γ."
    return f"Decoding failed: {type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"


def lab_callback(function):
    """Run a lab callback on the model thread (torch used from a second thread slows the live decoding, see
    worker.py), and turn its ValueError into a gr.Error with its sentence."""
    @functools.wraps(function)
    def wrapped(*args):
        try:
            return worker.call(function, *args)
        except ValueError as error:
            raise gr.Error(str(error)) from error
    return wrapped
