#!/usr/bin/env python3
"""Writes an F32 GGUF file (arch qwen2) from a Hugging Face-layout Qwen2 checkpoint directory (config.json,
model.safetensors, a byte-level BPE tokenizer.json), for scripts/bench-llamacpp.sh --shape qwen2-0.5b.

Usage: python3 scripts/qwen2-gguf.py MODEL_DIR OUT.gguf   (LLAMACPP_HOME: where the kit's build.sh put
make_gguf.py and llama.cpp's gguf-py, default /tmp/llamacpp-peer)

The kit's make_gguf.py converts GPT-2 and Llama only; this takes its safetensors reader and byte-level vocabulary
(padded to vocab_size) and writes what llama.cpp's convert_hf_to_gguf.py writes for Qwen2ForCausalLM: the
Qwen2 tensor names (q/k/v biases kept; no row permutation, Qwen2's rotary pairs are llama.cpp's NEOX order), no
output.weight where the head is tied (llama.cpp then multiplies by token_embd), 1-D tensors F32.
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, os.environ.get("LLAMACPP_HOME", "/tmp/llamacpp-peer"))
import make_gguf  # noqa: E402  (sets up llama.cpp's gguf-py on import)
from make_gguf import gguf  # noqa: E402


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit("usage: qwen2-gguf.py MODEL_DIR OUT.gguf")
    d, out = Path(sys.argv[1]), Path(sys.argv[2])
    hp = make_gguf.json.load(open(d / "config.json", encoding="utf-8"))
    if hp["model_type"] != "qwen2":
        raise SystemExit(f"{d / 'config.json'}: model_type {hp['model_type']!r}, this script writes qwen2 only")
    n_layer = hp["num_hidden_layers"]
    tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, n_layer)
    w = gguf.GGUFWriter(path=None, arch=gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.QWEN2])
    for name, t in make_gguf.read_safetensors(d / "model.safetensors").items():
        if name == "lm_head.weight" and hp.get("tie_word_embeddings", False):
            continue
        new = tmap.get_name(name, try_suffixes=(".weight", ".bias"))
        if new is None:
            raise SystemExit(f"{d / 'model.safetensors'}: cannot map tensor {name!r}")
        w.add_tensor(new, make_gguf.np.ascontiguousarray(t, dtype=make_gguf.np.float32),
                     raw_dtype=gguf.GGMLQuantizationType.F32)
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name(d.name)
    w.add_block_count(n_layer)
    w.add_context_length(hp["max_position_embeddings"])
    w.add_embedding_length(hp["hidden_size"])
    w.add_feed_forward_length(hp["intermediate_size"])
    w.add_head_count(hp["num_attention_heads"])
    w.add_head_count_kv(hp["num_key_value_heads"])
    w.add_rope_freq_base(hp.get("rope_theta", 10000.0))
    w.add_layer_norm_rms_eps(hp["rms_norm_eps"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    make_gguf.set_vocab_gpt2(w, d, hp)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.write_header_to_file(path=out)
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
