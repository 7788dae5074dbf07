"""The native half of `make setup`'s self-check, run in a child process by
`evalctl.lifecycle.selfcheck`: load the embedded model, generate a few tokens, embed a sentence.

It prints llama.cpp's build features before touching the model, so that when llama.cpp dies
of a signal the parent still knows what the build was compiled for.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from evalctl.modelfiles.manifest import resolve, verify
from evalctl.server import hardware

PROMPT = "The capital of France is"
SENTENCE = "evalctl checks that llama.cpp runs on this machine."
GENERATE_TOKENS = 8
N_CTX = 256


def main() -> int:
    print(json.dumps({"system_info": hardware.system_info()}), flush=True)
    import llama_cpp

    model = resolve(None)
    verify(model)
    llm = llama_cpp.Llama(model_path=str(model.path), n_ctx=N_CTX, n_threads=1, verbose=False)
    # Not streamed, so one response; llama-cpp-python's type says it may be an iterator.
    out: Any = llm.create_completion(PROMPT, max_tokens=GENERATE_TOKENS, temperature=0.0)
    generated = int(out["usage"]["completion_tokens"])
    llm.close()
    print(json.dumps({"generated_tokens": generated}), flush=True)
    embedder = llama_cpp.Llama(
        model_path=str(model.path),
        embedding=True,
        pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
        n_ctx=N_CTX,
        n_batch=N_CTX,
        n_ubatch=N_CTX,
        n_threads=1,
        verbose=False,
    )
    vector = embedder.embed(SENTENCE, normalize=True)
    embedder.close()
    print(json.dumps({"embedding_dims": len(vector)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
