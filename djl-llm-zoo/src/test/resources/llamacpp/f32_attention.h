// llmzoo_f32_attention(params): attention in float32 where the KV cache is F32, on any llama.cpp.
// Since e81b8e4b (2025-08-30; flash_attn_type, default AUTO) llama.cpp runs flash attention on the CPU and
// casts an F32 KV cache to F16 for it (src/llama-graph.cpp, build_attn_mha: "k = ggml_cast(ctx0, k,
// GGML_TYPE_F16)"), which moved log-probabilities by up to 1.3e-2; before, flash attention was off unless
// asked (bool flash_attn). This turns it off with whichever field the llama.h compiled against has.
#pragma once

// LLAMA_FLASH_ATTN_TYPE_DISABLED is 0; the enumerator itself is absent from older headers
template <typename P>
static auto llmzoo_no_flash_attn(P & p, int) -> decltype(p.flash_attn_type, void()) {
    p.flash_attn_type = decltype(p.flash_attn_type)(0);
}

template <typename P>
static auto llmzoo_no_flash_attn(P & p, long) -> decltype(p.flash_attn, void()) {
    p.flash_attn = false;
}

template <typename P>
static void llmzoo_f32_attention(P & p) {
    llmzoo_no_flash_attn(p, 0);
}
