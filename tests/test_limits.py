"""One table of limits (config.NUMBER_FIELDS): every numeric setting's range and default, which the command line,
the page, DecodeConfig and the hosted policy all read; docs/usage.md's table of settings says the same."""

import re
from pathlib import Path

import pytest

from specviz.app.policy import Policy
from specviz.app.request import NUMBERS, RunRequest, field_limits
from specviz.cli import build_parser, config_from_args
from specviz.config import NUMBER_FIELDS, DecodeConfig, parse_field

USAGE = Path(__file__).resolve().parents[1] / "docs" / "usage.md"


def beyond(name: str) -> float:
    field = NUMBER_FIELDS[name]
    return field.high + (1 if field.whole else 0.5)


@pytest.mark.parametrize("name", list(NUMBER_FIELDS))
def test_the_command_line_and_the_config_refuse_the_same_value_in_the_same_words(name):
    with pytest.raises(ValueError) as cli:
        parse_field(name, str(beyond(name)))
    with pytest.raises(ValueError) as config:
        DecodeConfig(**{name: beyond(name)}).validate()
    assert str(cli.value) == str(config.value) == (f"{name} must be {NUMBER_FIELDS[name].describe()}, got "
                                                   f"{beyond(name)!r}")


@pytest.mark.parametrize("name", NUMBERS)
def test_the_page_takes_the_tables_range_and_default_where_the_server_is_local(name):
    assert getattr(RunRequest(), name) == getattr(DecodeConfig(), name) == NUMBER_FIELDS[name].default
    with pytest.raises(ValueError, match=f"^{name} must be {re.escape(NUMBER_FIELDS[name].describe())}, got "):
        RunRequest(**{name: beyond(name)}).to_config(Policy())
    low, high = field_limits(Policy()).get(name, (NUMBER_FIELDS[name].low, NUMBER_FIELDS[name].high))
    assert (low, high) == (NUMBER_FIELDS[name].low, NUMBER_FIELDS[name].high)  # a local page narrows nothing


def test_the_command_lines_defaults_are_the_tables():
    config = config_from_args(build_parser().parse_args(["generate", "--prompt", "x"]))
    for name in ("gamma", "max_new_tokens", "temperature", "top_k", "top_p", "seed", "ngram_size"):
        assert getattr(config, name) == NUMBER_FIELDS[name].default, name


def test_a_hosted_server_narrows_only_within_the_table():
    hosted = Policy(hosted=True, max_new_tokens=256, max_gamma=8)
    limits = field_limits(hosted)
    assert limits == {"gamma": (1, 8), "max_new_tokens": (1, 256)}
    for name, (low, high) in limits.items():
        assert NUMBER_FIELDS[name].low <= low <= high <= NUMBER_FIELDS[name].high
    with pytest.raises(ValueError, match="^gamma must be a whole number from 1 to 8, got 9"):
        RunRequest(gamma=9).to_config(hosted)


def test_the_usage_docs_table_of_settings_is_the_tables():
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", USAGE.read_text(encoding="utf-8"), flags=re.M))
    for name, field in NUMBER_FIELDS.items():
        assert rows.get(name, "").strip() == f"{field.describe()}; default {field.default:g}", name
