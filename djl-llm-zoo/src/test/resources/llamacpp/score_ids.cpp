// score_ids: the log-probability llama.cpp gives each token of a prompt after the ones before it
// (what `bin/llmzoo score` prints), from one batch with the logits of every position.
//   score_ids -m MODEL.gguf [-t 2] [--kv f16|f32] --ids 1,2,3
// Prints "logprobs: ..." (comma separated, one fewer than the ids).
#include "llama.h"
#include "f32_attention.h"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

static void usage(const char * a0) {
    fprintf(stderr, "usage: %s -m model.gguf [-t threads] [--kv f16|f32] --ids 1,2,3\n", a0);
    exit(1);
}

int main(int argc, char ** argv) {
    std::string model_path, ids_arg, kv = "f32";
    int n_threads = 2;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto next = [&]() -> std::string { if (i + 1 >= argc) usage(argv[0]); return argv[++i]; };
        if (a == "-m") model_path = next();
        else if (a == "-t") n_threads = std::stoi(next());
        else if (a == "--kv") kv = next();
        else if (a == "--ids") ids_arg = next();
        else usage(argv[0]);
    }
    if (model_path.empty() || ids_arg.empty()) usage(argv[0]);
    std::vector<llama_token> toks;
    std::stringstream ss(ids_arg);
    std::string item;
    while (std::getline(ss, item, ',')) toks.push_back(std::stoi(item));
    const int n = (int) toks.size();
    if (n < 2) usage(argv[0]);

    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    ggml_backend_load_all();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(model_path.c_str(), mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", model_path.c_str()); return 1; }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n + 8;
    cp.n_batch = n;
    cp.n_ubatch = n;
    cp.n_threads = n_threads;
    cp.n_threads_batch = n_threads;
    if (kv == "f32") { cp.type_k = GGML_TYPE_F32; cp.type_v = GGML_TYPE_F32; llmzoo_f32_attention(cp); }
    else if (kv != "f16") usage(argv[0]);
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot create context\n"); return 1; }

    llama_batch batch = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        batch.token[i] = toks[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n;
    if (llama_decode(ctx, batch)) { fprintf(stderr, "decode failed\n"); return 1; }
    printf("logprobs:");
    for (int i = 0; i + 1 < n; i++) {
        const float * lg = llama_get_logits_ith(ctx, i);
        double max = lg[0];
        for (int v = 1; v < n_vocab; v++) max = std::fmax(max, lg[v]);
        double sum = 0;
        for (int v = 0; v < n_vocab; v++) sum += std::exp(lg[v] - max);
        printf("%s%.9g", i ? "," : " ", lg[toks[i + 1]] - max - std::log(sum));
    }
    printf("\n");
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
