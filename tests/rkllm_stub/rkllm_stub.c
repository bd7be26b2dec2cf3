/*
 * A stand-in for Rockchip's librkllmrt.so, for tests on machines without an RK3588.
 *
 * It exports the RKLLM C API with the struct layouts of one ABI family, chosen at build time:
 *   gcc -shared -fPIC -DRKLLM_ABI=121 -DSTUB_VERSION='"1.2.3"' rkllm_stub.c -o librkllmrt.so
 *   RKLLM_ABI=121: runtime 1.2.1-1.2.3 (bare result-callback pointer)
 *   RKLLM_ABI=130: runtime 1.3.0       (RKLLMCallback struct, per-run sampling/max_new_tokens)
 * plus stub_sizeof_<Struct>() / stub_offsetof_<Struct>_<field>() so the tests can compare the
 * Python ctypes layouts with what a C compiler makes of the same declarations.
 *
 * Behaviour mimicked: version lines printed at init (stdout and stderr), init fails above a 4096
 * context or on a file without the model magic, a scripted answer streamed token by token with a
 * multi-byte character split across a WAITING and a NORMAL callback, abort, busy flag, pause
 * (callback returns 1), ERROR when the prompt exceeds max_context_len, perf figures at FINISH.
 * It proves the binding, not the NPU: nothing here touches a neural network or a driver.
 *
 * Prompt commands (anywhere in the prompt): "/echo" answers with what it was given (role, system prompt, token
 * estimate, the prompt itself); "/long" repeats the scripted answer 40 times.
 * Env: RKLLM_STUB_TOKEN_DELAY_MS (default 15), RKLLM_STUB_CRASH_IN_INIT=1 raises SIGSEGV in init.
 */
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef RKLLM_ABI
#define RKLLM_ABI 130
#endif
#ifndef STUB_VERSION
#if RKLLM_ABI == 130
#define STUB_VERSION "1.3.0"
#else
#define STUB_VERSION "1.2.3"
#endif
#endif

#define MODEL_CONTEXT_LIMIT 4096
#define ANSWER "Torque the M3 screws to 0.8 Nm \xe2\x80\x94 see [1]."

typedef void *LLMHandle;
typedef enum { RKLLM_RUN_NORMAL = 0, RKLLM_RUN_WAITING = 1, RKLLM_RUN_FINISH = 2, RKLLM_RUN_ERROR = 3 } LLMCallState;
typedef enum { RKLLM_INPUT_PROMPT = 0, RKLLM_INPUT_TOKEN = 1, RKLLM_INPUT_EMBED = 2, RKLLM_INPUT_MULTIMODAL = 3 } RKLLMInputType;
typedef enum { RKLLM_INFER_GENERATE = 0, RKLLM_INFER_GET_LAST_HIDDEN_LAYER = 1, RKLLM_INFER_GET_LOGITS = 2 } RKLLMInferMode;

typedef struct {
    int32_t base_domain_id;
    int8_t embed_flash;
    int8_t enabled_cpus_num;
    uint32_t enabled_cpus_mask;
    uint8_t n_batch;
    int8_t use_cross_attn;
    uint8_t reserved[104];
} RKLLMExtendParam;

typedef struct {
    const char *model_path;
    int32_t max_context_len;
    int32_t max_new_tokens;
    int32_t top_k;
    int32_t n_keep;
    float top_p;
    float temperature;
    float repeat_penalty;
    float frequency_penalty;
    float presence_penalty;
    int32_t mirostat;
    float mirostat_tau;
    float mirostat_eta;
    bool skip_special_token;
#if RKLLM_ABI >= 130
    bool ignore_eos_token;
    bool is_async;
#else
    bool is_async;
    const char *img_start;
    const char *img_end;
    const char *img_content;
#endif
    RKLLMExtendParam extend_param;
} RKLLMParam;

typedef struct { float *embed; size_t n_tokens; } RKLLMEmbedInput;
typedef struct { int32_t *input_ids; size_t n_tokens; } RKLLMTokenInput;

#if RKLLM_ABI >= 130
typedef struct {
    char *prompt;
    struct {
        float *image_embed; size_t n_image_tokens; size_t n_image;
        const char *image_start; const char *image_end; const char *image_content;
        size_t image_width; size_t image_height;
    } image;
    struct {
        float *video_embed; size_t n_frame_tokens; size_t n_frame_per_video; size_t n_video;
        const char *video_start; const char *video_end; const char *video_content;
        size_t frame_width; size_t frame_height;
    } video;
} RKLLMMultiModalInput;
#else
typedef struct {
    char *prompt; float *image_embed; size_t n_image_tokens; size_t n_image;
    size_t image_width; size_t image_height;
} RKLLMMultiModalInput;
#endif

typedef struct {
    const char *role;
    bool enable_thinking;
    RKLLMInputType input_type;
    union {
        const char *prompt_input;
        RKLLMEmbedInput embed_input;
        RKLLMTokenInput token_input;
        RKLLMMultiModalInput multimodal_input;
    };
} RKLLMInput;

typedef struct { const char *lora_adapter_name; } RKLLMLoraParam;
typedef struct { int save_prompt_cache; const char *prompt_cache_path; } RKLLMPromptCacheParam;

#if RKLLM_ABI >= 130
typedef struct {
    int32_t top_k; float top_p; float temperature; float repeat_penalty; float frequency_penalty;
    float presence_penalty; int32_t mirostat; float mirostat_tau; float mirostat_eta;
} RKLLMSamplingParam;
#endif

typedef struct {
    RKLLMInferMode mode;
    RKLLMLoraParam *lora_params;
    RKLLMPromptCacheParam *prompt_cache_params;
#if RKLLM_ABI >= 130
    RKLLMSamplingParam *sampling_params;
    int keep_history;
    int32_t max_new_tokens;
#else
    int keep_history;
#endif
} RKLLMInferParam;

typedef struct { const float *hidden_states; int embd_size; int num_tokens; } RKLLMResultLastHiddenLayer;
typedef struct { const float *logits; int vocab_size; int num_tokens; } RKLLMResultLogits;
typedef struct {
    float prefill_time_ms; int prefill_tokens; float generate_time_ms; int generate_tokens; float memory_usage_mb;
} RKLLMPerfStat;
typedef struct {
    const char *text;
    int32_t token_id;
    RKLLMResultLastHiddenLayer last_hidden_layer;
    RKLLMResultLogits logits;
    RKLLMPerfStat perf;
} RKLLMResult;

typedef int (*LLMResultCallback)(RKLLMResult *result, void *userdata, LLMCallState state);

#if RKLLM_ABI >= 130
typedef int (*LLMGetEmbedCallback)(void *userdata, int32_t *tokens, uint64_t num_tokens, void *embed, uint64_t len);
typedef int (*LLMTokenizerCallback)(void *userdata, const char *text, int32_t text_len, int32_t *tokens, int32_t n_tokens_max);
typedef struct {
    LLMResultCallback result_callback;
    void *result_userdata;
    LLMTokenizerCallback tokenizer_callback;
    void *tokenizer_userdata;
    LLMGetEmbedCallback embed_callback;
    void *embed_userdata;
} RKLLMCallback;
#endif

/* ------------------------------------------------------------------ the fake model instance */

typedef struct {
    RKLLMParam param;
    LLMResultCallback callback;
    void *callback_userdata;
    volatile int abort_flag;
    volatile int running;
    char system_prompt[512];
} StubModel;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static int token_delay_us(void) {
    const char *v = getenv("RKLLM_STUB_TOKEN_DELAY_MS");
    return (v ? atoi(v) : 15) * 1000;
}

RKLLMParam rkllm_createDefaultParam(void) {
    RKLLMParam p;
    memset(&p, 0, sizeof p);
    p.max_context_len = 512;
    p.max_new_tokens = -1;
    p.top_k = 1;
    p.n_keep = -1;
    p.top_p = 0.9f;
    p.temperature = 0.8f;
    p.repeat_penalty = 1.1f;
    p.mirostat_tau = 5.0f;
    p.mirostat_eta = 0.1f;
    p.skip_special_token = true;
    p.extend_param.n_batch = 1;
    return p;
}

#if RKLLM_ABI >= 130
int rkllm_init(LLMHandle *handle, RKLLMParam *param, RKLLMCallback *callback)
#else
int rkllm_init(LLMHandle *handle, RKLLMParam *param, LLMResultCallback callback)
#endif
{
    if (getenv("RKLLM_STUB_CRASH_IN_INIT") && atoi(getenv("RKLLM_STUB_CRASH_IN_INIT")))
        raise(SIGSEGV);
    if (!handle || !param || !param->model_path) {
        fprintf(stderr, "E rkllm: invalid arguments to rkllm_init\n");
        return -1;
    }
    printf("I rkllm: rkllm-runtime version: %s, rknpu driver version: 0.9.8, platform: RK3588\n", STUB_VERSION);
    FILE *f = fopen(param->model_path, "rb");
    char magic[5] = {0};
    if (!f) {
        fprintf(stderr, "E rkllm: failed to open model file %s\n", param->model_path);
        return -1;
    }
    size_t got = fread(magic, 1, 5, f);
    fclose(f);
    if (got != 5 || memcmp(magic, "RKLLM", 5) != 0) {
        fprintf(stderr, "E rkllm: invalid rknn llm model magic\n");
        return -1;
    }
    fprintf(stderr, "I rkllm: rkllm-toolkit version: 1.2.1b1, max_context_limit: %d, npu_core_num: 3, "
                    "target_platform: RK3588, model_dtype: W8A8\n", MODEL_CONTEXT_LIMIT);
    if (param->max_context_len > MODEL_CONTEXT_LIMIT) {
        fprintf(stderr, "E rkllm: max_context_len (%d) exceeds the model's max_context_limit (%d)\n",
                param->max_context_len, MODEL_CONTEXT_LIMIT);
        return -1;
    }
    StubModel *m = calloc(1, sizeof *m);
    if (!m) return -1;
    m->param = *param;
#if RKLLM_ABI >= 130
    if (!callback || !callback->result_callback) { free(m); return -1; }
    m->callback = callback->result_callback;
    m->callback_userdata = callback->result_userdata;
#else
    if (!callback) { free(m); return -1; }
    m->callback = callback;
#endif
    printf("I rkllm: reset chat template:\nI rkllm: system_prompt: <|im_start|>system\\n...\n");
    *handle = m;
    return 0;
}

int rkllm_destroy(LLMHandle handle) {
    free(handle);
    return 0;
}

int rkllm_abort(LLMHandle handle) {
    if (!handle) return -1;
    ((StubModel *)handle)->abort_flag = 1;
    return 0;
}

/* rkllm.h: "0 if a task is running, non-zero for otherwise". */
int rkllm_is_running(LLMHandle handle) {
    if (!handle) return -1;
    return ((StubModel *)handle)->running ? 0 : 1;
}

int rkllm_set_chat_template(LLMHandle handle, const char *system_prompt, const char *prefix, const char *postfix) {
    (void)prefix; (void)postfix;
    if (!handle) return -1;
    StubModel *m = handle;
    snprintf(m->system_prompt, sizeof m->system_prompt, "%s", system_prompt ? system_prompt : "");
    return 0;
}

int rkllm_clear_kv_cache(LLMHandle handle, int keep_system_prompt, int *start_pos, int *end_pos) {
    (void)keep_system_prompt; (void)start_pos; (void)end_pos;
    return handle ? 0 : -1;
}

int rkllm_load_prompt_cache(LLMHandle handle, const char *path) { (void)path; return handle ? 0 : -1; }
int rkllm_release_prompt_cache(LLMHandle handle) { return handle ? 0 : -1; }

static int emit(StubModel *m, void *userdata, const char *text, LLMCallState state, int token_id) {
    RKLLMResult r;
    memset(&r, 0, sizeof r);
    r.text = text;
    r.token_id = token_id;
    return m->callback(&r, userdata ? userdata : m->callback_userdata, state);
}

int rkllm_run(LLMHandle handle, RKLLMInput *input, RKLLMInferParam *infer, void *userdata) {
    StubModel *m = handle;
    if (!m || !input || !infer || input->input_type != RKLLM_INPUT_PROMPT || !input->prompt_input) return -1;
    double t0 = now_ms();
    m->abort_flag = 0;
    m->running = 1;
    const char *prompt = input->prompt_input;
    int prompt_tokens = (int)((strlen(prompt) + strlen(m->system_prompt)) / 4) + 1;
    if (prompt_tokens > m->param.max_context_len) {
        fprintf(stderr, "E rkllm: prompt of %d tokens exceeds max_context_len %d\n", prompt_tokens,
                m->param.max_context_len);
        RKLLMResult r;
        memset(&r, 0, sizeof r);
        m->callback(&r, userdata, RKLLM_RUN_ERROR);
        m->running = 0;
        return -1;
    }
    int max_new = m->param.max_new_tokens;
#if RKLLM_ABI >= 130
    if (infer->max_new_tokens > 0) max_new = infer->max_new_tokens;
#endif
    char *answer;
    size_t cap = 4096 + strlen(prompt) * 2;
    answer = calloc(1, cap);
    if (!answer) { m->running = 0; return -1; }
    if (strstr(prompt, "/echo")) {
        snprintf(answer, cap, "role=%s system=%s prompt_tokens=%d prompt=%s", input->role ? input->role : "(null)",
                 m->system_prompt, prompt_tokens, prompt);
    } else if (strstr(prompt, "/long")) {
        for (int i = 0; i < 40; i++) { strcat(answer, ANSWER); strcat(answer, " "); }
    } else {
        strcpy(answer, ANSWER);
    }
    usleep(token_delay_us()); /* "prefill" */
    double t_prefill = now_ms();
    int generated = 0, rc = 0, stopped = 0;
    size_t i = 0, n = strlen(answer);
    char piece[256];
    while (i < n && !stopped) {
        /* one "token": optional leading space, then up to the next space, at most 200 bytes */
        size_t j = i + 1;
        while (j < n && answer[j] != ' ' && j - i < 200) j++;
        size_t len = j - i;
        /* a multi-byte character inside the token is split: its lead byte goes out in WAITING */
        size_t k = i;
        while (k < j && (unsigned char)answer[k] < 0xC0) k++;
        if (k < j) {
            memcpy(piece, answer + i, k + 1 - i);
            piece[k + 1 - i] = 0;
            if (emit(m, userdata, piece, RKLLM_RUN_WAITING, 1000 + generated) == 1) { stopped = 1; break; }
            usleep(token_delay_us());
            memcpy(piece, answer + k + 1, j - k - 1);
            piece[j - k - 1] = 0;
        } else {
            memcpy(piece, answer + i, len);
            piece[len] = 0;
        }
        if (m->abort_flag) break;
        generated++;
        if (emit(m, userdata, piece, RKLLM_RUN_NORMAL, 1000 + generated) == 1) { stopped = 1; break; }
        i = j;
        if (max_new > 0 && generated >= max_new) break;
        usleep(token_delay_us());
        if (m->abort_flag) break;
    }
    if (!stopped && !m->abort_flag) {
        RKLLMResult r;
        memset(&r, 0, sizeof r);
        r.perf.prefill_time_ms = (float)(t_prefill - t0);
        r.perf.prefill_tokens = prompt_tokens;
        r.perf.generate_time_ms = (float)(now_ms() - t_prefill);
        r.perf.generate_tokens = generated;
        r.perf.memory_usage_mb = 123.5f;
        m->callback(&r, userdata, RKLLM_RUN_FINISH);
    }
    free(answer);
    m->running = 0;
    return rc;
}

int rkllm_run_async(LLMHandle handle, RKLLMInput *input, RKLLMInferParam *infer, void *userdata) {
    (void)handle; (void)input; (void)infer; (void)userdata;
    fprintf(stderr, "E rkllm: the stub has no async mode\n");
    return -1;
}

/* ------------------------------------------------------------------ layout helpers for the tests */

#define SIZEOF(T) size_t stub_sizeof_##T(void) { return sizeof(T); }
#define OFFSETOF(T, f) size_t stub_offsetof_##T##_##f(void) { return offsetof(T, f); }

int stub_abi(void) { return RKLLM_ABI; }

SIZEOF(RKLLMExtendParam)
OFFSETOF(RKLLMExtendParam, base_domain_id)
OFFSETOF(RKLLMExtendParam, embed_flash)
OFFSETOF(RKLLMExtendParam, enabled_cpus_num)
OFFSETOF(RKLLMExtendParam, enabled_cpus_mask)
OFFSETOF(RKLLMExtendParam, n_batch)
OFFSETOF(RKLLMExtendParam, use_cross_attn)
OFFSETOF(RKLLMExtendParam, reserved)

SIZEOF(RKLLMParam)
OFFSETOF(RKLLMParam, model_path)
OFFSETOF(RKLLMParam, max_context_len)
OFFSETOF(RKLLMParam, max_new_tokens)
OFFSETOF(RKLLMParam, top_k)
OFFSETOF(RKLLMParam, n_keep)
OFFSETOF(RKLLMParam, top_p)
OFFSETOF(RKLLMParam, temperature)
OFFSETOF(RKLLMParam, repeat_penalty)
OFFSETOF(RKLLMParam, frequency_penalty)
OFFSETOF(RKLLMParam, presence_penalty)
OFFSETOF(RKLLMParam, mirostat)
OFFSETOF(RKLLMParam, mirostat_tau)
OFFSETOF(RKLLMParam, mirostat_eta)
OFFSETOF(RKLLMParam, skip_special_token)
OFFSETOF(RKLLMParam, is_async)
OFFSETOF(RKLLMParam, extend_param)
#if RKLLM_ABI >= 130
OFFSETOF(RKLLMParam, ignore_eos_token)
#else
OFFSETOF(RKLLMParam, img_start)
OFFSETOF(RKLLMParam, img_end)
OFFSETOF(RKLLMParam, img_content)
#endif

SIZEOF(RKLLMInput)
OFFSETOF(RKLLMInput, role)
OFFSETOF(RKLLMInput, enable_thinking)
OFFSETOF(RKLLMInput, input_type)
OFFSETOF(RKLLMInput, prompt_input)
OFFSETOF(RKLLMInput, embed_input)
OFFSETOF(RKLLMInput, token_input)
OFFSETOF(RKLLMInput, multimodal_input)
SIZEOF(RKLLMMultiModalInput)

SIZEOF(RKLLMInferParam)
OFFSETOF(RKLLMInferParam, mode)
OFFSETOF(RKLLMInferParam, lora_params)
OFFSETOF(RKLLMInferParam, prompt_cache_params)
OFFSETOF(RKLLMInferParam, keep_history)
#if RKLLM_ABI >= 130
OFFSETOF(RKLLMInferParam, sampling_params)
OFFSETOF(RKLLMInferParam, max_new_tokens)
SIZEOF(RKLLMSamplingParam)
#endif

SIZEOF(RKLLMPerfStat)
SIZEOF(RKLLMResult)
OFFSETOF(RKLLMResult, text)
OFFSETOF(RKLLMResult, token_id)
OFFSETOF(RKLLMResult, last_hidden_layer)
OFFSETOF(RKLLMResult, logits)
OFFSETOF(RKLLMResult, perf)

#if RKLLM_ABI >= 130
SIZEOF(RKLLMCallback)
OFFSETOF(RKLLMCallback, result_callback)
OFFSETOF(RKLLMCallback, result_userdata)
OFFSETOF(RKLLMCallback, tokenizer_callback)
OFFSETOF(RKLLMCallback, tokenizer_userdata)
OFFSETOF(RKLLMCallback, embed_callback)
OFFSETOF(RKLLMCallback, embed_userdata)
#endif
