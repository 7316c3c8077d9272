#!/usr/bin/env python3
"""Hugging Face transformers beside `llmzoo bench` on the same GPU: a Llama of a ModelShape's config with
random weights, eager attention, float16; prefill of a PROMPT-token random prompt and greedy decode of NEW
tokens at batch B, timed with CUDA synchronisation, median of RUNS after WARMUP untimed runs. Prints one JSON object.

Usage: python3 scripts/hf_bench.py --batch 1 --prompt-tokens 128 --new-tokens 128 --runs 3 --warmup 1
"""
import argparse
import json
import statistics
import time

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

# benchmarks/ModelShape.TINYLLAMA_1_1B
TINYLLAMA = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22, num_attention_heads=32,
                 num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048, rms_norm_eps=1e-5,
                 rope_theta=10000.0, tie_word_embeddings=False)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--prompt-tokens", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    a = p.parse_args()
    torch.manual_seed(42)
    config = LlamaConfig(**TINYLLAMA)
    config._attn_implementation = "eager"  # the issue's baseline: transformers' eager attention
    model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.float16).eval()
    ids = torch.randint(0, config.vocab_size, (a.batch, a.prompt_tokens), device="cuda")
    mask = torch.ones_like(ids)

    def prefill():
        with torch.no_grad():
            model(input_ids=ids, attention_mask=mask, use_cache=True)

    def generate():
        with torch.no_grad():
            model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=a.new_tokens,
                           min_new_tokens=a.new_tokens, do_sample=False, pad_token_id=0)

    def timed(f):
        torch.cuda.synchronize()
        start = time.perf_counter()
        f()
        torch.cuda.synchronize()
        return time.perf_counter() - start

    for _ in range(a.warmup):
        timed(prefill)
        timed(generate)
    prefills, decodes = [], []
    for _ in range(a.runs):
        t_prefill = timed(prefill)
        t_all = timed(generate)
        prefills.append(a.batch * a.prompt_tokens / t_prefill)
        # generate's first token comes from its prefill; the other NEW - 1 are decode steps
        decodes.append(a.batch * (a.new_tokens - 1) / max(t_all - t_prefill, 1e-9))
    print(json.dumps({
        "model": "tinyllama-1.1b shape (random weights), transformers %s eager float16" % transformers.__version__,
        "device": torch.cuda.get_device_name(0), "torch": torch.__version__, "batch": a.batch,
        "prompt_tokens": a.prompt_tokens, "new_tokens": a.new_tokens, "runs": a.runs, "warmup": a.warmup,
        "prefill_tokens_per_s": statistics.median(prefills), "decode_tokens_per_s": statistics.median(decodes),
        "prefill_tokens_per_s_runs": prefills, "decode_tokens_per_s_runs": decodes,
        "peak_gpu_mb": torch.cuda.max_memory_reserved() / 2**20}))


if __name__ == "__main__":
    main()
