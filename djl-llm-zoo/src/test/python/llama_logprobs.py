"""A Llama checkpoint's next-token log-probabilities computed in float64 with numpy: the exact value
of the weights a checkpoint directory holds (config.json + model.safetensors, float32), for judging a
format's implementation against the same rounding of the weights computed exactly (Q4KAccuracyTest).

Usage: python3 llama_logprobs.py MODEL_DIR ID,ID,...  -> one log-probability a line, of ids[1:] each
given the ids before it (what Generator.scoreTokens returns).
"""
import json
import struct
import sys

import numpy as np


def tensors(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise ValueError(f"{name}: {info['dtype']}, not F32")
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype="<f4").reshape(info["shape"]).astype(np.float64)
    return out


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rotate(x, theta):  # (heads, T, D), Hugging Face's rotate_half
    d = x.shape[-1]
    inv = 1.0 / theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    angles = np.arange(x.shape[1], dtype=np.float64)[:, None] * inv[None, :]
    cos = np.cos(np.concatenate([angles, angles], axis=-1))
    sin = np.sin(np.concatenate([angles, angles], axis=-1))
    half = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], axis=-1)
    return x * cos + half * sin


def logprobs(model_dir, ids):
    config = json.load(open(f"{model_dir}/config.json"))
    w = tensors(f"{model_dir}/model.safetensors")
    p = "model."
    heads, kv = config["num_attention_heads"], config["num_key_value_heads"]
    hidden = config["hidden_size"]
    d = config.get("head_dim", hidden // heads)
    eps, theta = config["rms_norm_eps"], config.get("rope_theta", 10000.0)
    t = len(ids)
    x = w[p + "embed_tokens.weight"][ids]
    mask = np.triu(np.full((t, t), -np.inf), 1)
    for layer in range(config["num_hidden_layers"]):
        a = f"{p}layers.{layer}."
        h = rms_norm(x, w[a + "input_layernorm.weight"], eps)
        q = (h @ w[a + "self_attn.q_proj.weight"].T).reshape(t, heads, d).transpose(1, 0, 2)
        k = (h @ w[a + "self_attn.k_proj.weight"].T).reshape(t, kv, d).transpose(1, 0, 2)
        v = (h @ w[a + "self_attn.v_proj.weight"].T).reshape(t, kv, d).transpose(1, 0, 2)
        q, k = rotate(q, theta), rotate(k, theta)
        k, v = np.repeat(k, heads // kv, axis=0), np.repeat(v, heads // kv, axis=0)
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(d) + mask
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        attention = (scores / scores.sum(axis=-1, keepdims=True)) @ v
        x = x + attention.transpose(1, 0, 2).reshape(t, heads * d) @ w[a + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[a + "post_attention_layernorm.weight"], eps)
        gate = h @ w[a + "mlp.gate_proj.weight"].T
        up = h @ w[a + "mlp.up_proj.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w[a + "mlp.down_proj.weight"].T
    head = w.get("lm_head.weight", w[p + "embed_tokens.weight"])
    logits = rms_norm(x, w[p + "norm.weight"], eps) @ head.T
    logits = logits - logits.max(axis=-1, keepdims=True)
    log_softmax = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    return [log_softmax[i, ids[i + 1]] for i in range(t - 1)]


if __name__ == "__main__":
    for value in logprobs(sys.argv[1], [int(i) for i in sys.argv[2].split(",")]):
        print(repr(float(value)))
