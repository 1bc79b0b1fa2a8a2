"""`python -m scripts.random_weights NAME --tokenizer T --out DIR`, with the random initialisation on the GPU
where there is one: seconds, where the lease's 16 CPU cores took a minute and a half for the Qwen2.5 pair.

    python docs/data/gpu-cuda-graphs/build.py NAME TOKENIZER_FOLDER OUT_FOLDER
"""

import sys

import torch

from scripts.random_weights import build

if torch.cuda.is_available():
    torch.set_default_device("cuda")
print(build(*sys.argv[1:4]))
