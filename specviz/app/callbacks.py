"""What every tab's callbacks share: requests to configs, pipelines loaded on the model thread, and errors
translated into gr.Error sentences a user can act on (the server goes on serving).

Refused input (bad settings, a model that cannot be loaded, a prompt too long for the model) is the visitor's
to fix, not the server's: it becomes `refused(...)`, one line in the server log and no traceback. Anything else
(out of memory, a bug) keeps Gradio's traceback, for whoever runs the server.
"""

from __future__ import annotations

import functools
import inspect
import logging

import gradio as gr

from specviz.app import worker
from specviz.app.policy import current_policy
from specviz.app.request import RunRequest
from specviz.config import DecodeConfig
from specviz.models import loading as models
from specviz.pipeline import Pipeline, build_pipeline

LOG = logging.getLogger("specviz.app")


def refused(message: str) -> gr.Error:
    """The gr.Error for input the app refuses: shown to the visitor; one line in the server log, no traceback."""
    LOG.warning("refused: %s", " ".join(message.split())[:300])
    return gr.Error(message, print_exception=False)


def quiet_refusals(function):
    """Wrap a callback (a generator too) so that a gr.Error it raises from a ValueError, the way callbacks refuse
    input, is logged in one line with no traceback. Other errors pass through unchanged."""
    def quieter(error: gr.Error) -> gr.Error:
        if error.print_exception and isinstance(error.__cause__, ValueError):
            return refused(error.message)
        return error  # already quiet (and logged), or a failure whose traceback the server's owner needs

    if inspect.isgeneratorfunction(function):
        @functools.wraps(function)
        def stream(*args, **kwargs):
            try:
                yield from function(*args, **kwargs)
            except gr.Error as error:
                raise quieter(error) from error.__cause__
        return stream

    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except gr.Error as error:
            raise quieter(error) from error.__cause__
    return call


def make_config(request: RunRequest) -> DecodeConfig:
    """The request as a validated DecodeConfig that this server allows, or gr.Error with a clear sentence."""
    policy = current_policy()
    try:
        return request.to_config(policy)
    except ValueError as error:
        raise refused(str(error)) from error


def load_pipeline(config: DecodeConfig) -> Pipeline:
    """The pipeline for `config`, built on the model thread; loading failures become gr.Error."""
    try:
        return worker.call(build_pipeline, config)
    except (models.ModelUnavailable, models.IncompatibleModels, ValueError) as error:
        raise refused(str(error)) from error
    except Exception as error:  # out of memory while loading, among others
        raise gr.Error(friendly_message(error)) from error


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
            raise refused(str(error)) from error
    return wrapped
