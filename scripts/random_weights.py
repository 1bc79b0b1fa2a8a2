"""Random-weight checkpoints of the hub pairs' real architectures, for timing where the weights cannot be had.

A forward's time depends on the shapes, not on the weights' values, so a model built from the real config
times like the real one (docs/gpu.md). Its outputs are noise: a random draft and a random target rarely agree,
so α measured on such a pair says nothing about the real pair; take α from runs on real weights.

    python -m scripts.random_weights qwen2.5-1.5b --tokenizer FOLDER --out DIR/qwen2.5-1.5b

The tokenizer is copied from FOLDER (any local model folder, e.g. the converted offline model in SPECVIZ_CACHE);
the model's own vocabulary size is kept, so a larger head is padded as with a real checkpoint.
"""

import argparse
import sys

# The official configs' shapes (config.json of each hub repo), which is all a timing depends on.
ARCHITECTURES = {
    "qwen2.5-1.5b": dict(model_type="qwen2", hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                         num_attention_heads=12, num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True,
                         max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6),
    "qwen2.5-0.5b": dict(model_type="qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True,
                         max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6),
    "qwen2.5-7b": dict(model_type="qwen2", hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                       num_attention_heads=28, num_key_value_heads=4, vocab_size=152064, tie_word_embeddings=False,
                       max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6),
    "qwen2.5-14b": dict(model_type="qwen2", hidden_size=5120, intermediate_size=13824, num_hidden_layers=48,
                        num_attention_heads=40, num_key_value_heads=8, vocab_size=152064, tie_word_embeddings=False,
                        max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6),
    "smollm2-1.7b": dict(model_type="llama", hidden_size=2048, intermediate_size=8192, num_hidden_layers=24,
                         num_attention_heads=32, num_key_value_heads=32, vocab_size=49152, tie_word_embeddings=True,
                         max_position_embeddings=8192, rope_theta=130000.0, rms_norm_eps=1e-5),
    "smollm2-135m": dict(model_type="llama", hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, vocab_size=49152, tie_word_embeddings=True,
                         max_position_embeddings=8192, rope_theta=100000.0, rms_norm_eps=1e-5),
    "gpt2-xl": dict(model_type="gpt2", n_embd=1600, n_layer=48, n_head=25, vocab_size=50257, n_positions=1024),
    "gpt2": dict(model_type="gpt2", n_embd=768, n_layer=12, n_head=12, vocab_size=50257, n_positions=1024),
}


def build(name: str, tokenizer_folder: str, out: str, dtype: str = "bfloat16", seed: int = 0) -> str:
    """Save a random-weight `name` (in `dtype`) with the tokenizer of `tokenizer_folder` to `out`; return out."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    shape = dict(ARCHITECTURES[name])
    config = AutoConfig.for_model(shape.pop("model_type"), **shape)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder)
    config.bos_token_id, config.eos_token_id = tokenizer.bos_token_id, tokenizer.eos_token_id
    torch.manual_seed(seed)  # only for the throwaway weights
    model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.random_weights", description=__doc__.split("\n")[0])
    parser.add_argument("architecture", choices=sorted(ARCHITECTURES))
    parser.add_argument("--tokenizer", required=True, help="a local model folder whose tokenizer to copy")
    parser.add_argument("--out", required=True, help="the folder to write")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    args = parser.parse_args(argv)
    try:
        print(build(args.architecture, args.tokenizer, args.out, args.dtype))
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
