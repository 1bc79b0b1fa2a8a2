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
from specviz.decoding.pipeline import Pipeline, build_pipeline
from specviz.models import loading as models

LOG = logging.getLogger("specviz.app")


class Refusal(gr.Error):
    """Input the app refuses: the visitor sees the sentence; the server logs one line (`refused`), no traceback."""

    def __init__(self, message: str):
        super().__init__(message, print_exception=False)


def refused(message: str) -> Refusal:
    """The error to raise for input the app refuses, logged now as one line."""
    LOG.warning("refused: %s", " ".join(message.split())[:300])
    return Refusal(message)


def quiet_refusals(function):
    """Wrap a callback (a generator too) so that every refusal it raises is one log line and no traceback: a
    gr.Error from a ValueError (how callbacks refuse input) or one already marked quiet. Other errors (out of memory,
    a bug) pass through unchanged, with their traceback."""
    def quieter(error: gr.Error) -> gr.Error:
        if isinstance(error, Refusal):
            return error  # already logged
        if isinstance(error.__cause__, Refusal):  # gr.Error is a ValueError: a callback's `except ValueError` wrapped it
            return error.__cause__
        if not error.print_exception or isinstance(error.__cause__, ValueError):
            return refused(error.message)
        return error

    def reraise(error: gr.Error):
        quiet = quieter(error)
        raise quiet from (error.__cause__ if quiet is error else None)

    if inspect.isgeneratorfunction(function):
        @functools.wraps(function)
        def stream(*args, **kwargs):
            try:
                yield from function(*args, **kwargs)
            except gr.Error as error:
                reraise(error)
        return stream

    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except gr.Error as error:
            reraise(error)
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
    except Exception as error:
        raise pipeline_error(error) from error


def pipeline_error(error: Exception) -> gr.Error:
    """What to tell the user when loading failed: the loader's own sentence, or advice (out of memory)."""
    if isinstance(error, (models.ModelUnavailable, models.IncompatibleModels, ValueError)):
        return refused(str(error))
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
        except gr.Error:
            raise  # already a sentence (a Refusal from app/fields.py, say)
        except ValueError as error:
            raise refused(str(error)) from error
    return wrapped
