"""A pair of models is one row of presets.PAIRS: the CLI's presets and help, the app's menu, labels and settings,
and the hosted policy's models are all made from it."""

from pathlib import Path

from specviz.app import pair_menu
from specviz.app.policy import offered_models
from specviz.config import LLAMA_CPP, TRANSFORMERS, DecodeConfig, DrafterSpec, ModelSpec
from specviz.models import presets


def test_names_and_titles_are_unique():
    names = [pair.name for pair in presets.PAIRS]
    titles = [pair.title for pair in presets.PAIRS if pair.title]
    assert len(set(names)) == len(names) and len(set(titles)) == len(titles)
    assert all((pair.title is None) == (pair.label is None) for pair in presets.PAIRS)


def test_every_titled_row_is_in_the_menu_with_its_models_and_label():
    for pair in presets.PAIRS:
        if pair.title is None:
            assert pair.models not in pair_menu.PAIRS.values() or pair.name == "offline"
            continue
        assert pair_menu.PAIRS[pair.title] == pair.models
        assert pair_menu.MENU_LABELS[pair.title].startswith(pair.label)
    assert list(pair_menu.PAIRS)[-1] == pair_menu.CUSTOM_PAIR and len(pair_menu.PAIRS) == len(pair_menu.MENU_LABELS)


def test_the_cli_help_names_every_preset_and_what_it_needs():
    text = presets.preset_help()
    for pair in presets.PAIRS:
        assert pair.name in text
    assert "qwen2.5-coder (offline with requirements-pair.txt)" in text and "gpt2-xl (hub)" in text


def test_a_rows_settings_are_what_the_menu_and_the_cli_run_with():
    for pair in presets.PAIRS:
        for backend in (TRANSFORMERS, LLAMA_CPP):
            assert presets.preset_settings(pair.name, backend) == dict(pair.settings.get(backend, {}))
            if pair.title:
                menu = pair_menu.pair_settings(pair.title, backend=backend)
                defaults = {name: getattr(DecodeConfig, name) for name in menu}
                assert menu == {**defaults, **pair.settings.get(backend, {})}
    assert pair_menu.pair_settings(pair_menu.CUSTOM_PAIR)["gamma"] == DecodeConfig.gamma
    assert presets.preset_settings("no such pair") == {}


def test_the_hosted_policy_offers_the_rows_models():
    hub_models = {model for pair in presets.PAIRS for model in (pair.target, DrafterSpec.parse(pair.draft).model)
                  if model and not ModelSpec.parse(model).offline}
    assert hub_models <= offered_models()


def test_the_readme_and_the_models_doc_list_every_preset():
    root = Path(__file__).resolve().parent.parent
    readme, docs = (root / "README.md").read_text(encoding="utf-8"), (root / "docs" / "models.md").read_text(encoding="utf-8")
    for pair in presets.PAIRS:
        assert f"`{pair.name}`" in readme and f"| `{pair.name}`" in docs, pair.name
