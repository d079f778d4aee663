"""Launch commands with the verdict SGLang 0.5.23 / vLLM 0.33.0 would give them, for `check serve`.

Each case: a draft variant (serve_drafts.make_draft keywords), a command ({model}, {draft} filled in),
the expected verdict (clean | warning | error) and the rule ids that must be among the findings.
The argparse-level verdicts (prefixes, aliases, ambiguity, unknown flags, `sglang serve`) were checked
against SGLang 0.5.23's own parser (ServerArgs.add_cli_args) when the corpus was written.
"""

from __future__ import annotations

import json

L = "python -m sglang.launch_server"
SPEC = "--speculative-algorithm EAGLE3 --speculative-draft-model-path {draft}"
CHAIN = "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4"
GOOD = f"{L} --model-path {{model}} {SPEC} {CHAIN}"


def vllm(spec: dict, *extra: str) -> str:
    return " ".join(["vllm serve {model}", *extra, "--speculative-config", "'" + json.dumps(spec) + "'"])


MLA = {"serve.draft_architecture"}  # a Llama-style draft on an MLA target: loads, but not the engines' MLA path
LONG_ROPE = {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096}
V3 = {"method": "eagle3", "model": "{draft}", "num_speculative_tokens": 3}

# (kind, draft variant, command, verdict, rules)
CASES: list[tuple[str, dict, str, str, set[str]]] = [
    # -- accepted forms of a correct command (0 false alarms allowed) ---------------------------
    ("canonical", {}, GOOD, "clean", set()),
    ("lowercase eagle3", {}, GOOD.replace("EAGLE3", "eagle3"), "clean", set()),
    ("mixed-case Eagle3", {}, GOOD.replace("EAGLE3", "Eagle3"), "clean", set()),
    (
        "unique prefixes",
        {},
        (
            f"{L} --model-path {{model}} --speculative-algo EAGLE3 --speculative-draft-model-p {{draft}} "
            "--speculative-num-step 3 --speculative-eagle 1 --speculative-num-draft 4"
        ),
        "clean",
        set(),
    ),
    (
        "alias --speculative-draft-model",
        {},
        GOOD.replace("--speculative-draft-model-path", "--speculative-draft-model"),
        "clean",
        set(),
    ),
    ("alias --model", {}, GOOD.replace("--model-path", "--model"), "clean", set()),
    (
        "--flag=value",
        {},
        (
            f"{L} --model-path={{model}} --speculative-algorithm=EAGLE3 "
            "--speculative-draft-model-path={draft} --speculative-num-steps=3 --speculative-eagle-topk=1 "
            "--speculative-num-draft-tokens=4"
        ),
        "clean",
        set(),
    ),
    ("sglang serve MODEL", {}, f"sglang serve {{model}} {SPEC} {CHAIN}", "clean", set()),
    ("sglang serve --model-path", {}, f"sglang serve --model-path {{model}} {SPEC} {CHAIN}", "clean", set()),
    ("sglang serve --model-type llm", {}, f"sglang serve {{model}} --model-type llm {SPEC} {CHAIN}", "clean", set()),
    ("--tp 2 prefix", {}, GOOD + " --tp 2", "clean", set()),
    ("--tensor-parallel-size", {}, GOOD + " --tensor-parallel-size 2", "clean", set()),
    (
        "env + python3 path",
        {},
        "CUDA_VISIBLE_DEVICES=0,1 /usr/bin/python3 " + GOOD[len("python ") :] + " --tp-size 2",
        "clean",
        set(),
    ),
    (
        "topk 1 without draft tokens",
        {},
        (f"{L} --model-path {{model}} {SPEC} --speculative-num-steps 3 --speculative-eagle-topk 1"),
        "clean",
        set(),
    ),
    (
        "tree topk 4",
        {},
        (
            f"{L} --model-path {{model}} {SPEC} --speculative-num-steps 3 --speculative-eagle-topk 4 "
            "--speculative-num-draft-tokens 8"
        ),
        "clean",
        set(),
    ),
    ("layers.0.* keys", {"key_prefix": "layers.0."}, GOOD, "clean", set()),
    ("Kimi-K2.5 default taps", {"target": "kimi-k25"}, GOOD, "warning", MLA),
    ("Kimi-K2.5 taps 3,31,59", {"target": "kimi-k25", "taps": [3, 31, 59]}, GOOD, "warning", MLA),
    ("Kimi-K2.5 auto choice = TTT 3", {"target": "kimi-k25"}, f"sglang serve {{model}} {SPEC}", "warning", MLA),
    ("Kimi-K2 (DeepseekV3) taps 4,30,57", {"target": "kimi-k2", "taps": [4, 30, 57]}, GOOD, "warning", MLA),
    ("GPT-OSS taps with n", {"target": "gpt-oss", "taps": [2, 12, 24]}, GOOD, "clean", set()),
    (
        "other flags kept",
        {},
        GOOD + " --mem-fraction-static 0.8 --context-length 256 --enable-mixed-chunk "
        "--host 0.0.0.0 --port 30000 --trust-remote-code",
        "clean",
        set(),
    ),
    ("vllm serve", {}, vllm(V3), "clean", set()),
    (
        "vllm --speculative_config=",
        {},
        "vllm serve {model} --speculative_config=" + "'" + json.dumps(V3) + "'",
        "clean",
        set(),
    ),
    (
        "vllm dotted keys",
        {},
        (
            "vllm serve {model} --speculative-config.method eagle3 --speculative-config.model {draft} "
            "--speculative-config.num_speculative_tokens 3"
        ),
        "clean",
        set(),
    ),
    ("vllm Kimi-K2.5", {"target": "kimi-k25", "taps": [3, 31, 59]}, vllm(V3), "warning", MLA),
    (
        "--config YAML",
        {
            "yaml": {
                "speculative-algorithm": "EAGLE3",
                "speculative-draft-model-path": "{draft}",
                "speculative-num-steps": 3,
                "speculative-eagle-topk": 1,
                "speculative-num-draft-tokens": 4,
            }
        },
        f"{L} --model-path {{model}} --config {{config}}",
        "clean",
        set(),
    ),
    (
        "--config YAML overridden on the command line",
        {"yaml": {"speculative-algorithm": "EAGLE"}},
        f"{L} --model-path {{model}} --config {{config}} {SPEC} {CHAIN}",
        "clean",
        set(),
    ),
    ("--context-length = build max_length", {"longest_row": 200}, GOOD + " --context-length 256", "clean", set()),
    (
        "long-context target capped by --context-length",
        {"target": "llama-long"},
        GOOD + " --context-length 256",
        "clean",
        set(),
    ),
    ("vllm --max-model-len within training", {}, vllm(V3, "--max-model-len 256"), "clean", set()),
    ("MLA draft on DeepSeek-V3", {"target": "deepseek-v3", "mla": True}, GOOD, "clean", set()),
    (
        "MLA draft on Kimi-K2.5, vllm",
        {"target": "kimi-k25", "taps": [3, 31, 59], "mla": True},
        vllm(V3),
        "clean",
        set(),
    ),
    # -- planted faults ------------------------------------------------------------------------
    ("--context-length 4096 past training", {}, GOOD + " --context-length 4096", "warning", {"serve.context_length"}),
    (
        "--context-length=512 past max_length 256",
        {"longest_row": 200},
        GOOD + " --context-length=512",
        "warning",
        {"serve.context_length"},
    ),
    ("long-context target, no --context-length", {"target": "llama-long"}, GOOD, "warning", {"serve.context_length"}),
    ("vllm --max-model-len 8k", {}, vllm(V3, "--max-model-len 8k"), "warning", {"serve.context_length"}),
    (
        "draft config given the target's YaRN",
        {"config_edit": {"rope_scaling": LONG_ROPE}},
        GOOD,
        "error",
        {"serve.draft_rope"},
    ),
    ("draft rope_theta edited", {"config_edit": {"rope_theta": 50000.0}}, GOOD, "error", {"serve.draft_rope"}),
    ("DeepSeek-V3 (MLA) target, Llama-style draft", {"target": "deepseek-v3"}, GOOD, "warning", MLA),
    (
        "MLA class over Llama-style weights",
        {
            "target": "deepseek-v3",
            "config_edit": {
                "architectures": ["Eagle3DeepseekV2ForCausalLM"],
                "kv_lora_rank": 8,
                "qk_rope_head_dim": 4,
                "qk_nope_head_dim": 4,
                "v_head_dim": 4,
            },
        },
        GOOD,
        "error",
        {"weights.mla.attention"},
    ),
    (
        "MLA draft config without kv_lora_rank",
        {"target": "deepseek-v3", "mla": True, "config_edit": {"kv_lora_rank": None}},
        GOOD,
        "error",
        {"mla.config.missing"},
    ),
    (
        "MLA draft without q_lora_rank on SGLang",
        {"target": "deepseek-v3", "mla": True, "config_edit": {"q_lora_rank": None}},
        GOOD,
        "warning",
        {"mla.q_lora.missing"},
    ),
    (
        "MLA draft trained at rope_theta 50000, vllm",
        {"target": "kimi-k25", "taps": [3, 31, 59], "mla": True, "rope_theta": 50000.0},
        vllm(V3),
        "warning",
        {"mla.rope.vllm_base"},
    ),
    (
        "MLA draft over 4 taps on SGLang",
        {"target": "deepseek-v3", "mla": True, "taps": [2, 3, 4, 5]},
        GOOD,
        "warning",
        {"mla.fc.taps"},
    ),
    (
        "EAGLE-3.1 MLA draft on SGLang",
        {"target": "deepseek-v3", "mla": True, "config_edit": {"fc_norm": True}},
        GOOD,
        "warning",
        {"mla.eagle31.sglang"},
    ),
    (
        "MLA draft with 2 layers on SGLang",
        {"target": "deepseek-v3", "mla": True, "config_edit": {"num_hidden_layers": 2}},
        GOOD,
        "error",
        {"mla.layers.count"},
    ),
    (
        "--config YAML sets EAGLE",
        {"yaml": {"speculative-algorithm": "EAGLE", "speculative-eagle-topk": 1}},
        (
            f"{L} --model-path {{model}} --config {{config}} --speculative-draft-model-path {{draft}} "
            "--speculative-num-steps 3"
        ),
        "error",
        {"sglang.algorithm.not_eagle3"},
    ),
    (
        "--config YAML with underscore keys",
        {"yaml": {"speculative_num_steps": 3}},
        f"{L} --model-path {{model}} --config {{config}} {SPEC}",
        "error",
        {"sglang.args.unknown"},
    ),
    (
        "--config not YAML",
        {},
        f"{L} --model-path {{model}} --config /etc/sglang.json {SPEC} {CHAIN}",
        "error",
        {"sglang.args.config"},
    ),
    ("EAGLE instead of EAGLE3", {}, GOOD.replace("EAGLE3", "EAGLE"), "error", {"sglang.algorithm.not_eagle3"}),
    ("NEXTN", {}, GOOD.replace("EAGLE3", "NEXTN"), "error", {"sglang.algorithm.not_eagle3"}),
    ("no algorithm", {}, GOOD.replace("--speculative-algorithm EAGLE3 ", ""), "error", {"sglang.algorithm.missing"}),
    ("unknown algorithm", {}, GOOD.replace("EAGLE3", "EAGLE4"), "error", {"sglang.algorithm.unknown"}),
    (
        "ambiguous --speculative-draft",
        {},
        GOOD.replace("--speculative-draft-model-path", "--speculative-draft"),
        "error",
        {"sglang.args.ambiguous"},
    ),
    (
        "misspelt flag",
        {},
        GOOD.replace("--speculative-algorithm", "--speculative-algoritm"),
        "error",
        {"sglang.args.unknown"},
    ),
    (
        "sglang serve positional not first",
        {},
        f"sglang serve --tp 2 {{model}} {SPEC} {CHAIN}",
        "error",
        {"sglang.args.model_path"},
    ),
    ("launch_server with positional model", {}, f"{L} {{model}} {SPEC} {CHAIN}", "error", {"sglang.args.invalid"}),
    ("stray positional", {}, GOOD + " extra", "error", {"sglang.args.unknown"}),
    (
        "sglang serve abbreviated model flag",
        {},
        f"sglang serve --model-pa {{model}} {SPEC} {CHAIN}",
        "error",
        {"sglang.args.model_path"},
    ),
    ("store_true with value", {}, GOOD + " --enable-mixed-chunk=1", "error", {"sglang.args.invalid"}),
    (
        "non-integer steps",
        {},
        GOOD.replace("--speculative-num-steps 3", "--speculative-num-steps three"),
        "error",
        {"sglang.args.invalid"},
    ),
    (
        "steps without topk",
        {},
        f"{L} --model-path {{model}} {SPEC} --speculative-num-steps 3",
        "error",
        {"sglang.chain.steps_without_topk"},
    ),
    (
        "topk without steps",
        {},
        f"{L} --model-path {{model}} {SPEC} --speculative-eagle-topk 1",
        "error",
        {"sglang.chain.topk_without_steps"},
    ),
    (
        "draft tokens without steps",
        {},
        f"{L} --model-path {{model}} {SPEC} --speculative-num-draft-tokens 4",
        "error",
        {"sglang.chain.topk_without_steps"},
    ),
    (
        "auto choice on Llama (5,4,8) vs TTT 3",
        {},
        f"{L} --model-path {{model}} {SPEC}",
        "warning",
        {"sglang.chain.auto_mismatch"},
    ),
    (
        "topk 1, 1 step, 16 draft tokens",
        {},
        GOOD.replace("--speculative-num-steps 3", "--speculative-num-steps 1").replace(
            "--speculative-num-draft-tokens 4", "--speculative-num-draft-tokens 16"
        ),
        "error",
        {"sglang.chain.topk1_draft_tokens"},
    ),
    (
        "steps beyond training",
        {},
        GOOD.replace("--speculative-num-steps 3", "--speculative-num-steps 5").replace(
            "--speculative-num-draft-tokens 4", "--speculative-num-draft-tokens 6"
        ),
        "warning",
        {"sglang.chain.beyond_training"},
    ),
    ("other draft path", {}, GOOD.replace("{draft}", "/models/other-draft"), "error", {"sglang.draft.path"}),
    ("d2t float", {"d2t_dtype": "float16"}, GOOD, "error", {"weights.vocab_map"}),
    ("d2t not increasing", {"shuffle_d2t": True}, GOOD, "error", {"weights.vocab_map"}),
    ("t2d inconsistent", {"t2d_off": True}, GOOD, "error", {"weights.vocab_map"}),
    ("unknown weight key", {"key_prefix": "decoder.0."}, GOOD, "error", {"weights.sglang.not_loaded"}),
    (
        "Kimi-K2.5 taps 3,31,59 written j-1",
        {"target": "kimi-k25", "taps": [3, 31, 59], "written": [2, 30, 58]},
        GOOD,
        "error",
        {"sglang.layers.mismatch"},
    ),
    ("Llama ids written as HF j", {"written": [2, 4, 5]}, GOOD, "error", {"sglang.layers.mismatch"}),
    (
        "Llama tap n (after last block) never captured",
        {"taps": [2, 4, 8], "written": [1, 3, 7]},
        GOOD,
        "error",
        {"sglang.layers.mismatch"},
    ),
    ("Mixtral: no EAGLE3 capture", {"target": "mixtral"}, GOOD, "error", {"sglang.layers.architecture"}),
    ("vllm method eagle", {}, vllm({**V3, "method": "eagle"}), "error", {"vllm.method"}),
    (
        "vllm no method, plain path",
        {},
        vllm({"model": "{draft}", "num_speculative_tokens": 3}),
        "error",
        {"vllm.method"},
    ),
    ("vllm tokens missing", {}, vllm({"method": "eagle3", "model": "{draft}"}), "error", {"vllm.tokens.missing"}),
    (
        "vllm tokens beyond training",
        {},
        vllm({**V3, "num_speculative_tokens": 6}),
        "warning",
        {"vllm.tokens.beyond_training"},
    ),
    ("vllm no speculative config", {}, "vllm serve {model}", "error", {"vllm.speculative.missing"}),
    (
        "vllm top-level ids shifted",
        {"target": "kimi-k25", "taps": [3, 31, 59], "top": [2, 30, 58]},
        vllm(V3),
        "error",
        {"vllm.layers.mismatch"},
    ),
]
