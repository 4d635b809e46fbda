#!/usr/bin/env python3
"""Writes the validation sets that come from the transcribed measurement tables (CSV files with one
row per published metric) into this folder:

    driver/data/validation/from_measured.py MEASURED_DIR

MEASURED_DIR holds dgxc-h100-llama3-8b-70b.csv, megatron-lm-readme-h100-weak-scaling.csv,
fujii2024-abci-a100-llama31-8b.csv, mtnlg530b.csv and megatron-lm-ci-golden-values-small-gpt.csv;
fujii2024-tsubame-h100-llama31-8b.csv (the H100 half of the same sweep log), megatron-bridge-llama.csv and
mlperf-gpt3-nvidia.csv, mlperf-llama31-405b.csv and mlperf-v51-llama31.csv lie in this folder. Every choice that a table does not state
(micro-batch, recompute, model details) is written into the record's notes as "assumed"."""

import csv
import json
import sys
from collections import OrderedDict
from pathlib import Path


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def header_lines(path):
    with open(path) as f:
        return [line[2:].strip() for line in f if line.startswith("# ")]


def write_set(path, data):
    # One record per block, the scenario's sections on one line each (as the hand-written sets).
    out = ["{"]
    keys = [k for k in data if k != "records"]
    for k in keys:
        out.append(f"  {json.dumps(k)}: {json.dumps(data[k], ensure_ascii=False)},")
    out.append('  "records": [')
    for i, r in enumerate(data["records"]):
        out.append("    {")
        items = list(r.items())
        for j, (k, v) in enumerate(items):
            comma = "," if j + 1 < len(items) else ""
            if k == "scenario":
                out.append('      "scenario": {')
                sitems = list(v.items())
                for m, (sk, sv) in enumerate(sitems):
                    scomma = "," if m + 1 < len(sitems) else ""
                    out.append(f"        {json.dumps(sk)}: {json.dumps(sv, ensure_ascii=False)}{scomma}")
                out.append("      }" + comma)
            else:
                out.append(f"      {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}{comma}")
        out.append("    }" + ("," if i + 1 < len(data["records"]) else ""))
    out.append("  ]")
    out.append("}")
    Path(path).write_text("\n".join(out) + "\n")


def gpt_model(r, name):
    # A GPT-style model as Megatron builds it by default: GeLU, LayerNorm, biases, tied embeddings.
    return OrderedDict(name=name, layers=int(r["layers"]), hidden=int(r["hidden"]), ffn_hidden=int(r["ffn_hidden"]),
                       heads=int(r["heads"]), kv_heads=int(r["kv_heads"]), vocab=int(r["vocab"]), tied_embeddings=True,
                       mlp="gelu", norm="layernorm", bias=True)


def container(framework):
    # "nvcr.io/nvidia/nemo:25.02.01" -> "nemo-25.02": the release, as the software presets name it.
    tag = framework.split("nvcr.io/nvidia/nemo:")[-1].strip().rstrip(")")
    return "nemo-" + ".".join(tag.split(".")[:2])


def dgxc(measured, out):
    records = []
    for r in rows(measured / "dgxc-h100-llama3-8b-70b.csv"):
        if r["measured_metric"] != "step_time_s":
            continue
        gpus, tp, pp, cp, dp = (int(r[k]) for k in ("gpus", "tp", "pp", "cp", "dp"))
        vpp = int(r["vpp"]) if r["vpp"] else 1
        software = container(r["framework"])
        precision = r["precision"].split()[0].lower()
        ambiguous = "ambiguous" in r["precision"]
        name = f"{r['model']}-{software}-{precision}-gpus{gpus}" + ("-log-example" if ambiguous else "")
        model = {"llama3-8b": "llama-3.1-8b", "llama3-70b": "llama-3.1-70b"}[r["model"]]
        tp_overlap = "tp-comm-overlap userbuffers enabled" in r["notes"]
        parallel = OrderedDict(tp=tp, cp=cp, pp=pp, dp=dp, schedule="interleaved" if vpp > 1 else "1f1b")
        if vpp > 1:
            parallel["vpp"] = vpp
        # NeMo's optimizers in these releases: Apex DistributedFusedAdam (NeMo 1.x launcher) with a contiguous
        # gradient buffer kept whole until the last micro-batch's reduce-scatter and grad_sync_dtype bf16, and
        # Megatron's distributed optimizer with grad_reduce_in_fp32 False (NeMo 2.0 performance recipes): both
        # shard the optimizer state only and keep and reduce bf16 gradients.
        parallel.update(sequence_parallel=r["sp"] == "True", sharding="optimizer", overlap_grad_reduce=True,
                        overlap_param_gather=True, tp_comm_overlap=tp_overlap)
        rec = OrderedDict()
        rec["name"] = name
        rec["table"] = r["model"]
        rec["software"] = software
        rec["scenario"] = OrderedDict(
            name=f"dgxc-{name}", model=model, cluster={"preset": "dgx-h100", "nodes": gpus // 8},
            training={"seq_len": int(r["seq_len"]), "global_batch": int(r["gbs"]), "micro_batch": int(r["mbs"]),
                      "recompute": "none", "grad_dtype": "bf16"},
            parallel=parallel)
        if precision == "fp8" and not ambiguous:
            rec["scenario"]["training"]["precision"] = "fp8-delayed"
            rec["scenario"]["training"]["fp8_params"] = True
        rec["measured"] = {"step_time_s": float(r["measured_value"])}
        rec["flops_formula"] = "megatron-pre-0.11"
        if ambiguous:
            rec["skip"] = ("precision ambiguous: the README labels this example log FP8, its step time is the BF16 "
                           "table's")
        rec["notes"] = (f"{r['record_id']}; {r['framework']}; recompute: {r['recompute']}; "
                        f"TP communication overlap: {'on (userbuffers)' if tp_overlap else 'not stated, left off'}; "
                        + ("FP8 recipe: delayed scaling (inferred: the NeMo configs of these releases set fp8_hybrid, "
                           "amax history 1024, amax_compute_algo max); FP8 parameters (NeMo 1.x: dgxc-benchmarking "
                           "llama3.1/configure.sh sets +model.fp8_params with FP8, releases v24.11.1 to v25.02.01; NeMo 2.0: "
                           "bf16_with_fp8_mixed sets fp8_params=True, NeMo d2b21556 "
                           "nemo/collections/llm/recipes/precision/mixed_precision.py); " if precision == "fp8" else "")
                        + f"{r['notes']}")
        records.append(rec)
    write_set(out / "dgxc-h100-llama3.json", OrderedDict(
        source=("NVIDIA DGX Cloud Benchmarking recipes (github.com/NVIDIA/dgxc-benchmarking), README 'Expected "
                "Performance' tables of Llama 3.1 8B and 70B on H100, releases v24.11.1 to v25.04.01 (commits per "
                "record)"),
        software="NeMo Framework containers nvcr.io/nvidia/nemo 24.09, 24.12 (NeMo 1.x launcher) and 25.02.01 "
                 "(NeMo 2.0 performance recipes); each record's 'software' names its release (nemo-25.02 for "
                 "25.02.01)",
        cluster="NVIDIA DGX Cloud: DGX H100 nodes, 8 x H100 SXM5 80 GB on NVSwitch, InfiniBand NDR 400 Gb/s per GPU "
                "(preset dgx-h100)",
        notes=("Measured: train_step_timing of the last step of a 50-step synthetic-data run, in seconds. Llama 3.1 "
               "8B (TP1 CP2) and 70B (TP4 PP4 VP5 CP2), sequence 8192, micro-batch 1, global batch 16 (8B) or 2 "
               "(70B) x GPUs, no recomputation, optimizer state sharded over DP x CP with overlapped gradient reduce and "
               "parameter gather, bf16 gradients (NeMo 1.x launcher: Apex DistributedFusedAdam, contiguous "
               "gradient buffer, grad_sync_dtype bf16; NeMo 2.0 performance recipes: Megatron's distributed "
               "optimizer with plugins.grad_reduce_in_fp32 = False). NVIDIA's published MFU uses Megatron's FLOP count with the s/h attention term "
               "(megatron-pre-0.11): 8B on 8 GPUs at 12.91 s gives 59.4 % of 989 TFLOP/s, published 59.37 %. One "
               "table per model, BF16 and FP8 rows together. FP8 rows run TransformerEngine's FP8 with delayed "
               "scaling (training.precision fp8-delayed) and FP8 parameters (training.fp8_params); NVIDIA's FP8 MFU is "
               "against the FP8 peak."),
        records=records))


def megatron_readme(measured, out):
    records = []
    for r in rows(measured / "megatron-lm-readme-h100-weak-scaling.csv"):
        gpus, tp, pp, dp = (int(r[k]) for k in ("gpus", "tp", "pp", "dp"))
        rec = OrderedDict()
        rec["name"] = f"{r['model']}-gpus{gpus}"
        rec["table"] = "weak-scaling"
        rec["software"] = "megatron-core-0.8"
        model = gpt_model(r, r["model"])
        # The table's model sizes count the input and output embeddings apart: 12 L h^2 + 2 V h gives 1.74,
        # 7.11, 16.11, 31.47, 69.79, 118.45, 177.17, 313.53 and 461.44 B for its 1.7B ... 462B (tied: 1.48 B
        # for "1.7B"), and the README calls its GPT-3 "slightly more than 175 billion parameters due to larger
        # vocabulary size": untied (--untie-embeddings-and-output-weights).
        model["tied_embeddings"] = False
        rec["scenario"] = OrderedDict(
            name=f"megatron-readme-{r['model']}", model=model, cluster={"preset": "dgx-h100", "nodes": gpus // 8},
            training={"seq_len": int(r["seq_len"]), "global_batch": int(r["gbs"]), "micro_batch": 1,
                      "recompute": "none"},
            parallel=OrderedDict(tp=tp, cp=1, pp=pp, dp=dp, schedule="1f1b", sequence_parallel=tp > 1,
                                 distributed_optimizer=True, overlap_grad_reduce=True, overlap_param_gather=True,
                                 tp_comm_overlap=tp > 1))
        rec["measured"] = {"tflops_per_gpu": float(r["measured_value"])}
        rec["flops_formula"] = "megatron-pre-0.11"
        rec["notes"] = (f"{r['record_id']}; assumed (not stated): micro-batch 1, no recomputation, one model chunk "
                        "per stage, Megatron GPT defaults (GeLU, LayerNorm, biases, ffn 4h, MHA); untied embeddings (the "
                        "table's model sizes are 12 L h^2 + 2 V h); "
                        "sequence parallelism and TP communication overlap with TP > 1 (README: --tp-comm-overlap); "
                        f"{r['notes']}")
        records.append(rec)
    write_set(out / "megatron-lm-readme-h100.json", OrderedDict(
        source=("NVIDIA/Megatron-LM README.md, section 'Performance Benchmarking', weak-scaling table "
                "(images/model_table.png, added in commit f2e5db402c, 2024-07-15), at commit "
                "d98e8a64ddf34856e74b24714e3bedb2f5a39553"),
        software="Megatron-Core r0.8.0 (the table's legend)",
        cluster="H100 80 GB, up to 6144 GPUs (DGX H100 nodes inferred; preset dgx-h100)",
        notes=("Measured: end-to-end model TFLOP/s per GPU (data loading, optimizer and logging included), Megatron's "
               "FLOP count of core 0.8 (s/h attention term). GPT models of 1.7 B to 462 B parameters, sequence 4096, "
               "vocabulary 131072, BF16 inferred (47 % of the 989 TFLOP/s peak), --overlap-grad-reduce "
               "--overlap-param-gather --tp-comm-overlap. Micro-batch and recomputation are not stated; the records "
               "assume micro-batch 1 and none. One table: the weak-scaling series."),
        records=records))


def fujii_scenario(name, preset, gpus_per_node, seq, tp, cp, pp, mbs, dp, gpus):
    # One run of the seed authors' sweep: Llama-3.1-8B, global batch 1024, Megatron-core 0.8 flags.
    return OrderedDict(
        name=name, model="llama-3.1-8b",
        cluster={"preset": preset, "nodes": gpus // gpus_per_node},
        training={"seq_len": seq, "global_batch": 1024, "micro_batch": mbs, "recompute": "none"},
        parallel=OrderedDict(tp=tp, cp=cp, pp=pp, dp=dp, schedule="1f1b", sequence_parallel=True,
                             distributed_optimizer=True, overlap_grad_reduce=True, overlap_param_gather=True))


def fujii(measured, out):
    records = []
    for r in rows(measured / "fujii2024-abci-a100-llama31-8b.csv"):
        tp, cp, pp, mbs, gpus, dp = (int(r[k]) for k in ("tp", "cp", "pp", "mbs", "gpus", "dp"))
        rec = OrderedDict()
        rec["name"] = f"tp{tp}-cp{cp}-pp{pp}-mbs{mbs}-gpus{gpus}"
        rec["table"] = f"gpus{gpus}"
        rec["software"] = "megatron-core-0.8"
        if tp * cp * pp * dp == gpus:
            rec["scenario"] = fujii_scenario(f"fujii-a100-abci-{rec['name']}", "abci-a", 8, int(r["seq"]),
                                             tp, cp, pp, mbs, dp, gpus)
        if r["tflops_per_gpu"]:
            rec["measured"] = {"tflops_per_gpu": float(r["tflops_per_gpu"])}
            rec["flops_formula"] = "megatron-pre-0.11"
        elif "scenario" not in rec:
            rec["skip"] = (f"layout needs {tp * cp * pp} GPUs, the log lists it on {gpus}; no throughput in the log")
        else:
            rec["skip"] = "no throughput in the sweep log: out of memory or not run (the log does not say which)"
        est = f"; the paper's memory estimate (first stage) {r['paper_estimate_gib']} GiB" if r["paper_estimate_gib"] else ""
        rec["notes"] = f"DP = {dp}{est}"
        records.append(rec)
    write_set(out / "fujii-2024-abci-a100.json", OrderedDict(
        source=("Fujii et al. 2024, Accelerating Large Language Model Training with 4D Parallelism and Memory "
                "Consumption Estimator (arXiv 2411.06465): the authors' sweep log, okoge-kaz/Megatron-LM "
                "scripts/abci/Llama-3.1-8B/4d_parallelism.md (2024-10-22), every row"),
        software=("Megatron-LM core 0.8, TransformerEngine 1.9, FlashAttention 2.5.8, bf16, "
                  "CUDA_DEVICE_MAX_CONNECTIONS=1"),
        cluster="ABCI A-nodes: 8 x A100 SXM4 40 GB per node on NVSwitch, 4 x InfiniBand HDR 200 Gb/s per node "
                "(preset abci-a)",
        notes=("Llama-3.1-8B, sequence 8192, global batch 1024, sequence parallelism, distributed optimizer, "
               "overlapped gradient reduce-scatter and parameter all-gather, no recomputation, 1F1B with one chunk. "
               "Measured: Megatron --log-throughput TFLOP/s per GPU (num_floating_point_operations of core 0.8: GQA, "
               "SwiGLU, s/h attention term, logits term). Rows without a number are listed and skipped. One table "
               "per GPU count: the layouts that compete at that size."),
        records=records))


def fujii_tsubame_sweep(out):
    # The H100 rows of the same sweep log that the set fujii-2024-tsubame-h100 (the calibration slice) does
    # not hold: every other layout and micro-batch at sequence 8192, and the whole sequence-16384 table.
    here = Path(__file__).resolve().parent
    table = rows(here / "fujii2024-tsubame-h100-llama31-8b.csv")
    numbers = {}
    for r in table:
        if r["tflops_per_gpu"]:
            numbers.setdefault((r["seq"], r["tflops_per_gpu"]), []).append(r)
    records = []
    for r in table:
        seq, tp, cp, pp, mbs, gpus, dp = (int(r[k]) for k in ("seq", "tp", "cp", "pp", "mbs", "gpus", "dp"))
        if seq == 8192 and mbs == 1 and (tp, cp, pp) in ((2, 1, 1), (4, 1, 1)):
            continue  # in fujii-2024-tsubame-h100
        rec = OrderedDict()
        rec["name"] = f"s{seq}-tp{tp}-cp{cp}-pp{pp}-mbs{mbs}-gpus{gpus}"
        rec["table"] = f"s{seq}-gpus{gpus}"
        rec["software"] = "megatron-core-0.8"
        if tp * cp * pp * dp == gpus:
            rec["scenario"] = fujii_scenario(f"fujii-h100-tsubame4-{rec['name']}", "tsubame4", 4, seq,
                                             tp, cp, pp, mbs, dp, gpus)
        twins = numbers.get((r["seq"], r["tflops_per_gpu"]), [])
        if "scenario" not in rec:
            rec["skip"] = f"layout needs {tp * cp * pp} GPUs, the log lists it on {gpus}; no throughput in the log"
        elif len(twins) > 1:
            others = ", ".join(f"(TP {o['tp']}, CP {o['cp']}, PP {o['pp']}, micro-batch {o['mbs']}) on {o['gpus']} GPUs"
                               for o in twins if o is not r)
            rec["skip"] = (f"the log gives the same {r['tflops_per_gpu']} TFLOP/s to {others} at this sequence length: "
                           "a copied cell is likely and the log does not say which is measured, so neither is used")
        elif r["tflops_per_gpu"]:
            rec["measured"] = {"tflops_per_gpu": float(r["tflops_per_gpu"])}
            rec["flops_formula"] = "megatron-pre-0.11"
        elif r["cell"] == "-":
            rec["skip"] = "no throughput in the sweep log ('-'): out of memory or not run (the log does not say which)"
        else:
            rec["skip"] = "empty cell in the sweep log: not run"
        rec["notes"] = f"DP = {dp}" if dp else f"TP x CP x PP = {tp * cp * pp} > {gpus} GPUs"
        records.append(rec)
    write_set(out / "fujii-2024-tsubame-h100-sweep.json", OrderedDict(
        source=("Fujii et al. 2024, Accelerating Large Language Model Training with 4D Parallelism and Memory "
                "Consumption Estimator (arXiv 2411.06465): the authors' sweep log, okoge-kaz/Megatron-LM "
                "scripts/abci/Llama-3.1-8B/4d_parallelism.md at f06b3a112dd4003422e2b65d6c9fb472bdbfcb05 "
                "(2024-10-22), section 'H100 (94GB)', every cell but the calibration slice of fujii-2024-tsubame-h100 "
                "(transcribed in driver/data/validation/fujii2024-tsubame-h100-llama31-8b.csv)"),
        software="Megatron-LM core 0.8, TransformerEngine 1.9, FlashAttention 2.5.8, bf16, CUDA_DEVICE_MAX_CONNECTIONS=1",
        cluster=("TSUBAME 4.0 node_f: 4 x H100 SXM5 94 GB per node on NVLink, 4 x InfiniBand NDR200 per node "
                 "(preset tsubame4)"),
        notes=("Held out: no efficiency file is fitted on these records. Llama-3.1-8B, sequence 8192 and 16384, "
               "global batch 1024 (the recipe's; assumed for 16384, where the log does not restate it), sequence "
               "parallelism, distributed optimizer, overlapped gradient reduce-scatter and parameter all-gather, no "
               "recomputation, 1F1B with one chunk; TP x CP above 4 spans two nodes. Measured: Megatron "
               "--log-throughput TFLOP/s per GPU (megatron-pre-0.11 count). Cells without a number, and numbers that "
               "the log repeats in another cell of the same table, are listed and skipped. One table per sequence "
               "length and GPU count: the layouts that compete there."),
        records=records))


def mtnlg(measured, out):
    by_id = OrderedDict()
    for r in rows(measured / "mtnlg530b.csv"):
        by_id.setdefault(r["record_id"], []).append(r)
    records = []
    for rid, rs in by_id.items():
        r = rs[0]
        gpus, tp, pp, dp = (int(r[k]) for k in ("gpus", "tp", "pp", "dp"))
        values = {x["measured_metric"]: float(x["measured_value"]) for x in rs}
        rec = OrderedDict()
        rec["name"] = f"mt-nlg-530b-gpus{gpus}"
        rec["table"] = "strong-scaling"
        rec["software"] = "megatron-deepspeed-2021"
        model = gpt_model(r, "mt-nlg-530b")
        rec["scenario"] = OrderedDict(
            name=f"mtnlg-530b-gpus{gpus}", model=model, cluster={"preset": "dgx-a100", "nodes": gpus // 8},
            training={"seq_len": int(r["seq_len"]), "global_batch": int(r["gbs"]), "micro_batch": 1,
                      "recompute": "full", "attention": "unfused"},
            parallel=OrderedDict(tp=tp, cp=1, pp=pp, dp=dp, schedule="1f1b", sequence_parallel=False,
                                 distributed_optimizer=True, overlap_grad_reduce=True, overlap_param_gather=False))
        rec["measured"] = {"step_time_s": values["step_time_s"], "tflops_per_gpu": values["tflops_per_gpu"]}
        rec["flops_formula"] = "narayanan-eq3"
        rec["notes"] = (f"{rid}; assumed (not stated): micro-batch 1, one model chunk per stage, unfused attention "
                        "(2021 Megatron kernels), ZeRO-1 as the distributed optimizer; A100 80 GB per the paper "
                        "(Selene); the published TFLOP/s is reproduced within 1 % by narayanan-eq3 from the step "
                        f"time; {r['notes']}")
        records.append(rec)
    write_set(out / "mtnlg-530b.json", OrderedDict(
        source=("Smith et al. 2022, Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B (arXiv 2201.11990), "
                "section 2.4 'Training Throughput', as quoted by github.com/cli99/llm-analysis "
                "examples/megatron-turing-nlg/README.md at d841e40aec8c84b9e76ba9cfbce67418adb172bd"),
        software="Megatron-DeepSpeed (Megatron tensor parallelism, DeepSpeed pipeline parallelism and ZeRO-1), mixed "
                 "precision",
        cluster="Selene: DGX A100 80 GB nodes, 8 x HDR 200 Gb/s per node (preset dgx-a100); 280, 350 and 420 nodes",
        notes=("MT-NLG 530B (105 layers, hidden 20480, 128 heads, vocabulary 50272), sequence 2048, global batch "
               "1920, TP 8, PP 35, full activation recomputation. Measured: seconds per iteration (compared) and "
               "TFLOP/s per GPU (the paper's count, Narayanan et al.'s Eq. 3). One table: the strong-scaling "
               "series. Compared, never fitted on (fit false): DeepSpeed's pipeline engine and ZeRO-1 are another "
               "software stack than the Megatron-LM runs the A100 80 GB parameters are fitted on, and its one table "
               "leaves nothing of that stack to cross-validate it with."),
        fit=False,
        records=records))

CI_GPUS = {"A100-80GB": {"preset": "dgx-a100", "nodes": 1}, "H100-80GB": {"preset": "dgx-h100", "nodes": 1},
           "GB200": {"gpu": "gb200-186gb", "gpus_per_node": 4, "nodes": 2}}


def ci_flags(notes):
    # "flags: a=b, c=d; ..." of the transcription's notes.
    text = notes.split("flags: ", 1)[1].split(";", 1)[0] if "flags: " in notes else ""
    return dict(item.split("=", 1) for item in text.split(", ") if "=" in item)


# The CI test cases whose model_config.yaml (Megatron-LM d98e8a64) sets --transformer-impl local:
# Megatron's own DotProductAttention, which materialises the s x s scores whatever the attention
# backend says (the transcription does not carry this flag).
CI_LOCAL_TRANSFORMER_IMPL = {
    "gpt3_mcore_tp1_pp1_dist_optimizer_overlap_grad_reduce_param_gather",
    "gpt3_mcore_tp1_pp1_resume_torch_dist_dist_optimizer_overlap_grad_reduce_param_gather",
    "gpt3_mcore_tp1_pp2", "gpt3_mcore_tp1_pp2_fp16", "gpt3_mcore_tp1_pp2_resume_torch_dist", "gpt3_mcore_tp1_pp4",
    "gpt3_mcore_tp1_pp4_resume_torch_dist", "gpt3_mcore_tp2_pp2_resume_torch_dist_uninstall_te",
    "gpt3_mcore_tp2_pp2_uninstall_te", "gpt3_mcore_tp2_pp2_uninstall_te_1node", "gpt3_mcore_tp4_pp1",
    "gpt3_mcore_tp4_pp1_resume_torch", "gpt3_mcore_tp4_pp1_resume_torch_dist",
}


# The CI test cases whose model_config.yaml (Megatron-LM d98e8a64) sets
# --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers (not in the
# transcription): (first, last) stage layers.
CI_UNEVEN_PIPELINE = {"gpt3_mcore_te_tp1_pp4_vp1_uneven_pipeline": (2, 2),
                      "gpt3_mcore_te_tp1_pp4_vp1_uneven_pipeline_1node": (2, 2)}

# The CI test cases whose model_config.yaml (Megatron-LM d98e8a64) sets
# --account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split and
# --num-virtual-stages-per-pipeline-rank (none of them in the transcription): (embedding, loss, vpp).
CI_PIPELINE_SPLIT = {"gpt3_mcore_te_tp1_pp4_vp2_account_for_embedding_loss_in_pipeline_split": (True, True, 2),
                     "gpt3_mcore_te_tp1_pp4_vp2_account_for_embedding_loss_in_pipeline_split_1node": (True, True, 2)}

# The CI test cases whose model_config.yaml (Megatron-LM d98e8a64) sets
# --microbatch-group-size-per-virtual-pipeline-stage (not in the transcription).
CI_MICROBATCH_GROUP = {"gpt3_mcore_te_tp1_pp4_vp1_tunable_overlap": 5,
                       "gpt3_mcore_te_tp1_pp4_vp1_tunable_overlap_1node": 5,
                       "gpt3_mcore_te_tp1_pp4_vp1_resume_torch_dist_tunable_overlap": 5}

# The FP8 CI test cases, from their model_config.yaml (Megatron-LM d98e8a64): --fp8-recipe tensorwise
# (per-tensor current scaling), --fp8-param-gather (FP8 parameters), --normalization RMSNorm.
CI_FP8 = {test: {"precision": "fp8-current", "norm": "rmsnorm"} for test in (
    "gpt3_weekly_mcore_tp2_pp2_current_scaling_native_fp8_tp_pp_sp_tp_overlap",
    "gpt3_weekly_mcore_tp4_cp2_current_scaling_native_fp8_tp_sp_cp_tp_overlap")}

# The CI test cases whose model_config.yaml (Megatron-LM) sets --use-megatron-fsdp with
# --data-parallel-sharding-strategy optim_grads_params (ZeRO-3; not in the transcription, whose fsdp
# column is False): parallel.sharding optimizer_grads_params.
CI_MEGATRON_FSDP = {"gpt3_mcore_te_tp2_zp_z3_resume_fsdp_dtensor": "optimizer_grads_params",
                    "gpt3_mcore_te_tp2_zp_z3_resume_fsdp_dtensor_1node": "optimizer_grads_params"}

# Test cases whose run holds memory that a training step of stepsim does not have, by a test-name
# feature: the reason a record of that test is left out.
CI_NOT_EXPRESSIBLE = {
    "defer_embedding_wgrad_compute": ("--defer-embedding-wgrad-compute keeps the output layer's inputs and output "
                                      "gradients of every micro-batch until the pipeline flush to compute its weight "
                                      "gradient then; stepsim does not model the deferral"),
    "gpt_grpo": "GRPO reinforcement learning: the run also generates (inference engine, KV cache, CUDA graphs)",
    "modelopt_distill": "knowledge distillation (ModelOpt): the rank also holds the teacher model and its activations",
    "reruns_resume_check_grads": ("a checkpoint-consistency test that runs several layouts in turn (model_config.yaml "
                                  "MODEL_ARGS to MODEL_ARGS_10: 1 or 2 GPUs, DP, TP, CP or PP of 2) and whose recompute "
                                  "flag (--recompute-num-layers 1) comes without a granularity; the transcription folds "
                                  "them into one layout of 8 GPUs"),
}


def ci_record(r):
    # The record of one CI row (test case and GPU) without its measurement: name, table, software,
    # scenario (or the reason it is left out) and the start of its notes.
    flags = ci_flags(r["notes"])
    test = r["model"].removeprefix("mcore-gpt-")
    name = f"{r['record_id']}-{test}-{r['gpu'].lower()}"
    gpus, tp, pp, cp, dp = (int(r[k]) for k in ("gpus", "tp", "pp", "cp", "dp"))
    vpp = int(r["vpp"]) if r["vpp"] else CI_PIPELINE_SPLIT.get(test, (False, False, 1))[2]
    rec = OrderedDict()
    rec["name"] = name
    rec["table"] = f"gpt-{r['layers']}l-{r['hidden']}h-seq{r['seq_len']}"
    rec["software"] = "megatron-core-0.20"
    skip = ""
    if r["vocab"].isdigit():
        model = gpt_model(r, f"ci-{rec['table']}")
        model["tied_embeddings"] = flags.get("untied-emb") != "True"
        if flags.get("swiglu") == "True":
            model["mlp"] = "swiglu"
    else:
        model = None
        skip = f"the vocabulary ({r['vocab']}) is not a number in the transcription"
    precision = r["precision"]
    fp8 = CI_FP8.get(test)
    if precision.startswith("fp8") and fp8 is None:
        skip = skip or "an FP8 recipe that the transcription does not state (model_config.yaml not transcribed)"
    if fp8 is not None and model is not None:
        model["norm"] = fp8["norm"]
    if "qk_layernorm" in test and model is not None:
        # --qk-layernorm (the test name; model_config.yaml): a norm of the model's kind over the head
        # dimension of every query and key head.
        model["qk_norm"] = True
    recompute = "none"
    training = OrderedDict(seq_len=int(r["seq_len"]), global_batch=int(r["gbs"]), micro_batch=int(r["mbs"]))
    if r["recompute"].startswith("full"):
        parts = r["recompute"].split(":")
        recompute = "full"
        training["recompute"] = "full"
        if len(parts) == 3:
            training["recompute_method"] = parts[1]
            training["recompute_num_layers"] = int(parts[2])
    elif r["recompute"] not in ("none", ""):
        skip = skip or f"recompute setting '{r['recompute']}' is not stated completely"
    else:
        training["recompute"] = "none"
    local = test in CI_LOCAL_TRANSFORMER_IMPL
    training["attention"] = "unfused" if flags.get("attention-backend") == "unfused" or local else "flash"
    if fp8 is not None:
        training["precision"], training["fp8_params"] = fp8["precision"], True
    distopt = r["dist_opt"] == "True"
    parallel = OrderedDict(tp=tp, cp=cp, pp=pp, dp=dp, schedule="interleaved" if vpp > 1 else "1f1b")
    if vpp > 1:
        parallel["vpp"] = vpp
    overlap_grad = flags.get("overlap-grad") == "True"
    parallel.update(sequence_parallel=r["sp"] == "True",
                    sharding=CI_MEGATRON_FSDP.get(test, "optimizer" if distopt else "none"),
                    overlap_grad_reduce=overlap_grad,
                    overlap_param_gather=flags.get("overlap-param") == "True" and distopt and overlap_grad,
                    tp_comm_overlap=fp8 is not None and flags.get("tp-comm-overlap") == "True")
    micro_batches = int(r["gbs"]) // (int(r["mbs"]) * dp)
    if test in CI_UNEVEN_PIPELINE:
        parallel["first_stage_layers"], parallel["last_stage_layers"] = CI_UNEVEN_PIPELINE[test]
    if test in CI_PIPELINE_SPLIT:
        (parallel["account_for_embedding_in_pipeline_split"],
         parallel["account_for_loss_in_pipeline_split"]) = CI_PIPELINE_SPLIT[test][:2]
    if test in CI_MICROBATCH_GROUP:
        parallel["microbatch_group_size"] = CI_MICROBATCH_GROUP[test]
    if "multi_dist_optimizer_instances" in test:
        # --num-distributed-optimizer-instances 2 (model_config.yaml): the optimizer state sharded over
        # half of the data-parallel group, replicated across the two halves.
        parallel["distributed_optimizer_instances"] = 2
    not_expressible = [why for feature, why in CI_NOT_EXPRESSIBLE.items() if feature in test]
    if not_expressible:
        skip = not_expressible[0]
    elif "account_for" in test and test not in CI_PIPELINE_SPLIT:
        skip = skip or "the embedding and the loss count as pipeline layers, with flags not transcribed"
    elif vpp > 1 and micro_batches % pp != 0 and test not in CI_MICROBATCH_GROUP:
        skip = skip or (f"interleaving with {micro_batches} micro-batches, not a multiple of pp={pp}, and no "
                        "micro-batch group size transcribed (Megatron refuses it with the default group of pp)")
    if model is not None and not skip:
        rec["scenario"] = OrderedDict(name=f"megatron-ci-{name}", model=model, cluster=CI_GPUS[r["gpu"]],
                                      training=training, parallel=parallel)
        software = OrderedDict()
        if "cross_entropy_loss_fusion" in test:
            # --cross-entropy-loss-fusion (model_config.yaml), the native implementation: the default, and
            # arguments.py at d98e8a64 rejects the TransformerEngine one.
            software["fused_cross_entropy"] = True
        if (r["gpu"] == "GB200" and training["attention"] == "flash" and flags.get("deterministic") == "True"
                and flags.get("attention-backend") == "default"):
            # TransformerEngine's backend choice on Blackwell (dot_product_attention/utils.py,
            # get_attention_backend; common/fused_attn/fused_attn.cpp): cuDNN attention is refused for
            # deterministic training with dropout (Megatron's default attention dropout 0.1, which these
            # tests keep), so FlashAttention-2 runs.
            software["attention"] = "flash-attention-2"
        if software:
            rec["scenario"]["software"] = OrderedDict(preset=rec["software"], **software)
    notes = (f"{r['record_id']}; {r['framework']}; precision {precision} "
             + ("(FP8 current scaling, FP8 parameters, RMSNorm: model_config.yaml); " if fp8 is not None
                else "(memory modelled as BF16); ")
             + f"recompute {r['recompute']}; "
             + ("transformer-impl local (model_config.yaml): unfused attention; " if local else ""))
    return rec, skip, notes


# The set-level fields of both CI sets.
CI_SOURCE = ("Megatron-LM CI functional tests (github.com/NVIDIA/Megatron-LM @ d98e8a64ddf34856e74b24714e3bedb2f5a39553, "
             "tests/functional_tests/test_cases/gpt/*/golden_values_{dev,lts}_dgx_{a100,h100,gb200}.json with their "
             "model_config.yaml), dense GPT cases, as transcribed in megatron-lm-ci-golden-values-small-gpt.csv")
CI_SOFTWARE = "Megatron-Core (CI dev and lts containers at that commit), TransformerEngine"
CI_CLUSTER = "one DGX A100 or DGX H100 node (8 GPUs), or two GB200 trays of 4"


def ci_rows(measured, metric):
    # The CI rows of one published metric, each with its record (ci_record).
    for r in rows(measured / "megatron-lm-ci-golden-values-small-gpt.csv"):
        if r["measured_metric"] == metric:
            yield (r, *ci_record(r))


def ci_measured(rec, skip, notes, measured):
    # A CI record completed with its measurement, FLOP formula, reason to skip and notes, in the
    # sets' key order.
    rec["measured"] = measured
    rec["flops_formula"] = "megatron-causal"
    if skip:
        rec["skip"] = skip
    rec["notes"] = notes
    return rec


def megatron_ci(measured, out):
    # Peak allocated memory (torch allocated_bytes.all.peak of the last rank) of Megatron-LM's CI
    # functional tests: one record per test case and GPU with a peak_mem_gib row.
    records = []
    for r, rec, skip, notes in ci_rows(measured, "peak_mem_gib"):
        records.append(ci_measured(rec, skip, notes + r["notes"], {"peak_allocated_gib": float(r["measured_value"])}))
    write_set(out / "megatron-lm-ci-memory.json", OrderedDict(
        source=CI_SOURCE, software=CI_SOFTWARE, cluster=CI_CLUSTER,
        notes=("Measured: torch's peak allocated bytes (mem-max-allocated-bytes, the caching allocator's "
               "allocated_bytes.all.peak since the process started) of the last rank, the maximum over the golden "
               "iterations, in GiB. Compared: stepsim's peak of the last pipeline stage without the CUDA context, "
               "the NCCL buffers and the allocator fragmentation (memory the allocator's peak does not count). The "
               "CI runs resume from checkpoints, run evaluation and some use fp16 or FP8; what a record's "
               "configuration does not state is Megatron's default (GeLU, LayerNorm, biases, tied embeddings "
               "unless the flags say otherwise). One table per model shape."),
        records=records))


# The step time of a CI test case of a GPT of hidden size below this is not compared: the CI's tiny
# GPT (12, 6 or 4 layers of hidden 512, sequence 1024) runs an iteration whose time is set by the host
# (Python and kernel launches), not by the GPU's kernels.
CI_SPEED_MIN_HIDDEN = 1024


def megatron_ci_speed(measured, out):
    # Iteration time of Megatron-LM's CI functional tests: one record per test case and GPU with a
    # step_time_s row, the model's scenario as in the memory set.
    records = []
    for r, rec, skip, notes in ci_rows(measured, "step_time_s"):
        rec["table"] = f"{rec['table']}-{r['gpu'].lower()}"
        flags = ci_flags(r["notes"])
        if int(r["hidden"]) < CI_SPEED_MIN_HIDDEN:
            skip = skip or (f"a GPT of hidden {r['hidden']} (the CI's tiny model): its iteration of "
                            f"{float(r['measured_value']):.3g} s is bound by the host (Python, kernel launches), "
                            "which stepsim does not model beyond a launch gap per kernel; the transcription marks "
                            "these cases as not for absolute step time")
        if "scenario" in rec and not skip and flags.get("no-gradient-accumulation-fusion") == "True":
            # --no-gradient-accumulation-fusion (model_config.yaml): the weight-gradient GEMMs write a bf16
            # gradient that a separate kernel adds to the fp32 main gradient.
            software = rec["scenario"].setdefault("software", OrderedDict(preset=rec["software"]))
            software["grad_accum_fusion"] = False
        if "scenario" in rec and not skip and flags.get("deterministic") == "True":
            # --deterministic-mode: the CI's training script (tests/functional_tests/shell_test_utils/
            # _run_training.sh) exports NCCL_ALGO=Ring (NVLS off), which determinism.py requires.
            rec["scenario"]["comm"] = OrderedDict(algorithm="ring")
        if skip:
            rec.pop("scenario", None)
        records.append(ci_measured(rec, skip, notes + r["notes"], {"step_time_s": float(r["measured_value"])}))
    write_set(out / "megatron-lm-ci-speed.json", OrderedDict(
        source=CI_SOURCE, software=CI_SOFTWARE, cluster=CI_CLUSTER,
        notes=("Measured: the iteration time ('iteration-time' of the last rank), the median of the golden "
               "iterations from the third on, in seconds. The scenarios are those of megatron-lm-ci-memory with the "
               "run's time-only flags. One table per model shape and GPU. Compared, never fitted on (fit false): the "
               "CI runs in deterministic mode, a few iterations long, whose costs beyond the flags stepsim models "
               "would otherwise leak into the efficiency of every other run of the GPU."),
        fit=False,
        records=records))


MB_SYSTEMS = {"DGX-H100": ("dgx-h100", 8), "DGX-B200": ("dgx-b200", 8), "DGX-GB200": ("gb200-nvl72", 4),
              "DGX-GB300": ("gb300-nvl72", 4)}
MB_MODELS = {"LLAMA3_8B": ("llama3-8b", "llama-3.1-8b"), "LLAMA3_70B": ("llama3-70b", "llama-3.1-70b"),
             "LLAMA3.1_405B": ("llama3.1-405b", "llama-3.1-405b")}
MB_PRECISION = {"FP8-CS": "fp8-current", "FP8-MX": "mxfp8", "MXFP8": "mxfp8"}  # 25.11 writes FP8-MX, 26.02 MXFP8


def mb_skip(r):
    # The rows whose run stepsim cannot express, or whose layout the source does not settle.
    if r["system"] not in MB_SYSTEMS:
        return f"{r['system']}: no cluster preset"
    if r["precision"] not in MB_PRECISION:
        return f"{r['precision']} is not modelled"
    if r["system"] == "DGX-GB200" and r["model"] == "LLAMA3_70B" and r["fsdp"] != "0":
        return ("the recipe offloads the activations of 40 of the 80 layers to the host (cpu_offloading_num_layers "
                "40, LLAMA3_70B GB200 FP8_CS configs), which is not modelled")
    if r["system"] == "DGX-GB300" and r["model"] == "LLAMA3_70B" and r["fsdp"] != "0":
        return ("the recipe offloads the activations of 20 of the 80 layers to the host (cpu_offloading_num_layers "
                "20, LLAMA3_70B GB300 FP8_CS configs), which is not modelled")
    if r["container"] == "25.11" and r["system"] == "DGX-GB300" and r["model"] == "LLAMA3_8B":
        return ("the table's micro-batch (2) and the 25.11 recipe's (4: LLAMA3_8B_GB300_FP8_CS_BASE_CONFIG, "
                "Megatron-Bridge v0.2.0) disagree, so the run's layout is not known")
    if r["container"] == "25.11" and r["system"] == "DGX-H100" and r["model"] == "LLAMA3_8B":
        return ("the table's layout (FSDP 8) and the 25.11 recipe (no FSDP, 5 of the 32 layers fully recomputed: "
                "Megatron-Bridge 8aed9a229, 2025-11-21) disagree, so the run's layout is not known")
    return ""


def megatron_bridge(out):
    # NVIDIA's Megatron-Bridge performance summaries of the NeMo 25.11 and 26.02 containers: Llama 3 8B / 70B
    # and Llama 3.1 405B pre-training in FP8 on DGX H100, DGX B200 and DGX GB200 (the recipes' settings read
    # in Megatron-Bridge's scripts/performance at the containers' releases, v0.2.0 and v0.3.0).
    here = Path(__file__).resolve().parent
    records = []
    for r in rows(here / "megatron-bridge-llama.csv"):
        gpus, gbs, mbs, seq = (int(r[k]) for k in ("gpus", "gbs", "mbs", "seq"))
        fsdp, tp, pp, cp = (int(r[k]) for k in ("fsdp", "tp", "pp", "cp"))
        vp = 1 if r["vp"] == "n/a" else int(r["vp"])
        short, model = MB_MODELS[r["model"]]
        system = r["system"].lower().removeprefix("dgx-")
        rec = OrderedDict()
        precision = "fp8-mx" if MB_PRECISION.get(r["precision"]) == "mxfp8" else r["precision"].lower()
        rec["name"] = f"{short}-{system}-{precision}-nemo-{r['container']}-gpus{gpus}"
        rec["table"] = f"{short}-nemo-{r['container']}"
        rec["software"] = f"nemo-{r['container']}"
        notes = (f"{r['container']} table, {r['system']}: published {r['tokens_per_s_per_gpu']} tokens/s and "
                 f"{r['model_tflops_per_gpu']} model TFLOP/s per GPU; step time = global batch x sequence / (tokens/s "
                 "per GPU x GPUs), derived")
        skip = mb_skip(r)
        if skip:
            rec["skip"] = skip
            rec["notes"] = notes
            records.append(rec)
            continue
        preset, per_node = MB_SYSTEMS[r["system"]]
        cluster = OrderedDict(preset=preset, nodes=gpus // per_node)
        if preset in ("gb200-nvl72", "gb300-nvl72"):
            cluster["nvlink_domain_gpus"] = min(gpus, 64)
            notes += "; NVLink domains of at most 64 GPUs (16 trays of a 72-GPU rack; inferred)"
        training = OrderedDict(seq_len=seq, global_batch=gbs, micro_batch=mbs, recompute="none", grad_dtype="bf16",
                               precision=MB_PRECISION[r["precision"]], fp8_params=True)
        parallel = OrderedDict(tp=tp, cp=cp, pp=pp, dp=gpus // (tp * cp * pp))
        parallel["schedule"] = "interleaved" if vp > 1 else "1f1b"
        if vp > 1:
            parallel["vpp"] = vp
        parallel["sequence_parallel"] = tp > 1
        parallel["sharding"] = "optimizer_grads_params" if fsdp else "optimizer"
        parallel["overlap_grad_reduce"] = True
        # Megatron-Bridge 0.2.0 turns the parameter all-gather overlap off for MXFP8 ("causes NaN grad norm").
        parallel["overlap_param_gather"] = not (r["container"] == "25.11" and precision == "fp8-mx")
        parallel["tp_comm_overlap"] = tp > 1
        if r["model"] == "LLAMA3.1_405B":
            parallel["account_for_embedding_in_pipeline_split"] = True
            parallel["account_for_loss_in_pipeline_split"] = True
        scenario = OrderedDict(name=f"megatron-bridge-{rec['name']}", model=model)
        if r["model"] == "LLAMA3_8B" and r["system"] != "DGX-H100":
            # cuda_graph_impl local, cuda_graph_scope full_iteration in the 8B B200 and GB200 recipes.
            scenario["software"] = OrderedDict(preset=rec["software"], cuda_graphs=True)
        scenario["cluster"] = cluster
        scenario["training"] = training
        scenario["parallel"] = parallel
        rec["scenario"] = scenario
        rec["measured"] = {"step_time_s": round(gbs * seq / (float(r["tokens_per_s_per_gpu"]) * gpus), 6)}
        # Megatron-Bridge's flop_utils.py: causal attention counted as half, the logits GEMM included.
        rec["flops_formula"] = "megatron-causal"
        rec["notes"] = notes
        records.append(rec)
    write_set(out / "megatron-bridge-llama.json", OrderedDict(
        source=("NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md at "
                "067f987df03b8355b03192d88d70f1709fedf51a, sections '25.11 NeMo Container' and '26.02 NeMo "
                "Container', pre-training: every Llama row (transcribed in "
                "driver/data/validation/megatron-bridge-llama.csv); the recipes read in Megatron-Bridge "
                "scripts/performance at v0.2.0 (7af9601c9, container 25.11) and v0.3.0 (21b02e0cf, 26.02)"),
        software=("NeMo Framework containers 25.11 and 26.02 (Megatron-Bridge 0.2.0 / 0.3.0, Megatron-core 0.15 / "
                  "0.16, TransformerEngine 2.9 / 2.12): presets nemo-25.11 and nemo-26.02"),
        cluster=("DGX H100 (preset dgx-h100), DGX B200 (dgx-b200), DGX GB200 NVL72 (gb200-nvl72) and DGX GB300 NVL72 "
                 "(gb300-nvl72); mock data"),
        notes=("Measured: tokens/s per GPU, as published, turned into step time. FP8 with current (tensorwise) "
               "scaling (training.precision fp8-current) or MXFP8 (mxfp8), FP8 parameters, attention and the "
               "output layer in BF16, gradients reduced in bf16, distributed optimizer with overlapped gradient "
               "reduce-scatter and parameter all-gather, TP communication overlap (userbuffers) where TP > 1, no "
               "recomputation, Llama 3.1 405B counting the embedding and the loss as pipeline layers, sequence 8192. "
               "One table per model and container. Compared, never fitted on (fit false): the first measured "
               "records of B200, GB200 and GB300, whose efficiencies are derived, and a newer stack on H100 than the one "
               "its parameters are fitted on."),
        fit=False,
        records=records))


def mlperf_gpt3(out):
    # NVIDIA's MLPerf Training GPT-3 175B submissions (v3.0 to v4.1) on H100: the layouts of the submissions'
    # config scripts, the step times of their result logs (transcribed in driver/data/validation/mlperf-gpt3-nvidia.csv).
    here = Path(__file__).resolve().parent
    records = []
    for r in rows(here / "mlperf-gpt3-nvidia.csv"):
        gpus, tp, pp, vp, mbs, gbs, seq = (int(r[k]) for k in ("gpus", "tp", "pp", "vp", "mbs", "gbs", "seq_len"))
        system = r["system_name"].lower().replace(" ", "-").replace("_", "-")
        rec = OrderedDict()
        rec["name"] = f"gpt3-175b-{r['version']}-{system}-gpus{gpus}"
        rec["table"] = r["version"]
        # The containers (NGC PyTorch 23.04 and 23.09 with NeMo for v3.x, 24.04 for v4.0, 24.09 for v4.1) as
        # the nearest software presets.
        rec["software"] = "nemo-24.09" if r["version"] == "v4.1" else "nemo-24.05"
        notes = (f"{r['submitter']} {r['system_name']}, {r['container']}; config {r['config_path']} "
                 f"({r['repo']} at {r['config_commit'][:8]}); results {r['results_path']} ({r['n_result_files']} "
                 f"files): block wall time per step {r['block_step_time_s_median']} s (min {r['block_step_time_s_min']}, "
                 f"max {r['block_step_time_s_max']})")
        if r["tracked_step_time_s_median"]:
            notes += f", NeMo's train_step_timing {r['tracked_step_time_s_median']} s"
        if r["config_match"] != "exact":
            notes += f"; config check: {r['config_match']}"
        if r["system_name"].startswith("Nyx"):
            rec["skip"] = "a B200 preview whose config sources config_common_blackwell.sh, absent from the repository"
            rec["notes"] = notes
            records.append(rec)
            continue
        if r["version"] == "v4.1" and "n1452" in r["system_name"]:
            rec["skip"] = "the same runs as v4.0's Eos-dfw n1452 (identical MLLOG lines)"
            rec["notes"] = notes
            records.append(rec)
            continue
        scenario = OrderedDict(name=f"mlperf-{rec['name']}", model="gpt3-175b")
        if r["cuda_graphs"] == "True":
            scenario["software"] = OrderedDict(preset=rec["software"], cuda_graphs=True)
            notes += "; CUDA graphs of the layers (LAYER_CUDA_GRAPH=1)"
        scenario["cluster"] = OrderedDict(preset="dgx-h100", nodes=gpus // int(r["gpus_per_node"]))
        # NeMo's distributed_fused_adam with grad_sync_dtype bf16 (the implementation's conf/custom.yaml): the
        # gradient buckets and their reduce-scatter in bf16.
        scenario["training"] = OrderedDict(seq_len=seq, global_batch=gbs, micro_batch=mbs, recompute="none",
                                           precision="fp8-delayed", fp8_params=r["fp8_params"] == "True",
                                           grad_dtype="bf16")
        parallel = OrderedDict(tp=tp, cp=1, pp=pp, dp=gpus // (tp * pp))
        parallel["schedule"] = "interleaved" if vp > 1 else "1f1b"
        if vp > 1:
            parallel["vpp"] = vp
        parallel["sequence_parallel"] = True
        parallel["distributed_optimizer"] = True
        parallel["overlap_grad_reduce"] = True
        parallel["overlap_param_gather"] = True
        parallel["tp_comm_overlap"] = r["tp_comm_overlap"] == "True"
        scenario["parallel"] = parallel
        rec["scenario"] = scenario
        rec["measured"] = {"step_time_s": float(r["block_step_time_s_median"])}
        rec["flops_formula"] = "megatron-causal"
        rec["notes"] = notes
        records.append(rec)
    write_set(out / "mlperf-gpt3-h100.json", OrderedDict(
        source=("NVIDIA's MLPerf Training GPT-3 175B submissions v3.0-v4.1: github:mlcommons/training_results_v3.0 "
                "(63e326c4), training_results_v3.1 (d06288b2), training_results_v4.0 (6fe95437), "
                "training_results_v4.1 (b87b9e39), NVIDIA/benchmarks/gpt3 configs and NVIDIA/results/*/gpt3 logs "
                "(transcribed in driver/data/validation/mlperf-gpt3-nvidia.csv)"),
        software=("NVIDIA's MLPerf GPT-3 implementation on NeMo and Megatron-core (NGC PyTorch 23.04, 23.09, 24.04, "
                  "24.09), TransformerEngine FP8 with delayed scaling: presets nemo-24.05 (v3.x, v4.0, the nearest) "
                  "and nemo-24.09 (v4.1)"),
        cluster=("DGX H100 (Eos, Eos-dfw), CoreWeave HGX H100 and Azure ND H100 v5, 8 x 400 Gb/s InfiniBand per node "
                 "(preset dgx-h100); 256 to 11,616 GPUs"),
        notes=("Measured: seconds per training step, the result logs' block wall time (evaluation excluded), median "
               "over a submission's result files. GPT-3 175B (the MLPerf benchmark: 96 layers, hidden 12288, "
               "sequence 2048), TP 4 with sequence parallelism and TP communication overlap, PP 8 (v4.0 at 10,752 "
               "and 11,616 GPUs: 6) interleaved, no recomputation, FP8 GEMMs, distributed optimizer. One table per "
               "MLPerf round. NeMo's distributed fused Adam reduces the gradients in bf16 (grad_sync_dtype). Compared, never fitted on (fit false): another implementation and other "
               "containers than the NeMo tables the H100 parameters are fitted on, and scales (up to 11,616 GPUs, "
               "8 to 16 micro-batches per pipeline) no fitted set reaches."),
        fit=False,
        records=records))


# MLPerf Llama 3.1 systems: the accelerator as the systems json names it -> (cluster preset, GPUs per node).
ML405_SYSTEMS = {"H100": ("dgx-h100", 8), "H200": ("dgx-h200", 8), "B200": ("dgx-b200", 8), "GB200": ("gb200-nvl72", 4),
                 "B300": ("dgx-b300", 8), "GB300": ("gb300-nvl72", 4)}
ML405_PRECISION = {"delayed": "fp8-delayed", "current": "fp8-current", "mxfp8": "mxfp8"}


def ml405_gpu(name):
    # The accelerator's family from the systems json's name ("NVIDIA H100-SXM5-80GB", "NVIDIA GB200", ...).
    for key in ("GB300", "GB200", "B300", "B200", "H200", "H100"):
        if key in name.upper():
            return key
    return None


def ml405_software(container):
    # NGC containers of the submissions as the nearest NeMo software presets (NeMo 25.02 is built on NGC PyTorch 25.01;
    # the 25.08 and 25.09 trees, NeMo and Megatron-core 25.09-alpha with TransformerEngine 2.8, are nearest NeMo 25.11's).
    return {"25.01": "nemo-25.02", "25.02": "nemo-25.02", "25.04": "nemo-25.04", "25.08": "nemo-25.11",
            "25.09": "nemo-25.11"}.get(container)


def ml405_flag(cell):
    # A cell that starts with True or False (the transcription adds where the value comes from).
    return cell.split()[0] == "True"


def mlperf_llama_scenario(r, name, model, software):
    # The scenario of one MLPerf Llama 3.1 submission from its transcribed config (the columns of
    # mlperf-llama31-405b.csv and mlperf-v51-llama31.csv) and what the scenario leaves to the notes.
    gpus, tp, pp, vp, cp, mbs, gbs, seq = (int(r[k]) for k in ("gpus", "tp", "pp", "vp", "cp", "mbs", "gbs", "seq_len"))
    notes = ""
    preset, per_node = ML405_SYSTEMS[ml405_gpu(r["gpu"])]
    scenario = OrderedDict(name=f"mlperf-{name}", model=model)
    graphs = r["cuda_graphs"].split()[0].rstrip(":")
    if graphs == "unknown" and "_cg" in r["config_file"]:
        notes += "; CUDA graphs assumed from the config's name (its config_common_cg.sh is not in the repository)"
        graphs = "full_iteration"
    if graphs in ("True", "full_iteration"):
        scenario["software"] = OrderedDict(preset=software, cuda_graphs=True)
    cluster = OrderedDict(preset=preset, nodes=gpus // per_node)
    if preset in ("gb200-nvl72", "gb300-nvl72"):
        # A run of one whole rack (18 trays, 72 GPUs) is one NVLink domain; larger runs use 16 trays of each rack.
        cluster["nvlink_domain_gpus"] = 72 if gpus == 72 else min(gpus, 64)
        notes += (f"; NVLink domains of {cluster['nvlink_domain_gpus']} GPUs "
                  + ("(the 18 trays of one rack)" if gpus == 72 else "(16 trays of a 72-GPU rack; inferred from the node counts)"))
    scenario["cluster"] = cluster
    scenario["training"] = OrderedDict(seq_len=seq, global_batch=gbs, micro_batch=mbs,
                                       recompute=r["act_recompute"].split()[0], grad_dtype=r["grad_dtype"].split()[0],
                                       precision=ML405_PRECISION[r["fp8_recipe"].split()[0]], fp8_params=ml405_flag(r["fp8_params"]))
    parallel = OrderedDict(tp=tp, cp=cp, pp=pp, dp=gpus // (tp * cp * pp))
    parallel["schedule"] = "interleaved" if vp > 1 else "1f1b"
    if vp > 1:
        parallel["vpp"] = vp
    parallel["sequence_parallel"] = ml405_flag(r["sequence_parallel"])
    if cp > 1:
        parallel["cp_comm_type"] = r["cp_comm_type"].split()[0]
    # TP_PP_DP_MAPPING: Megatron orders tp-ep-pp-cp-dp (v5.0's GB200 configs) or tp-cp-ep-pp-dp (v5.1); no experts.
    if r["rank_order"].startswith("tp-ep-pp-cp-dp"):
        parallel["rank_order"] = "tp-pp-cp-dp"
    elif r["rank_order"].startswith("tp-cp-ep-pp-dp") and pp > 1:
        parallel["rank_order"] = "tp-cp-pp-dp"
    parallel["distributed_optimizer"] = ml405_flag(r["dist_optimizer"])
    parallel["overlap_grad_reduce"] = ml405_flag(r["overlap_grad_reduce"])
    parallel["overlap_param_gather"] = ml405_flag(r["overlap_param_gather"])
    parallel["tp_comm_overlap"] = ml405_flag(r["tp_comm_overlap"])
    if model == "llama-3.1-405b":
        # ASYM_PP_EMBED / ASYM_PP_LOSS: the embedding and the loss count as pipeline layers (126 + 2 = 128).
        parallel["account_for_embedding_in_pipeline_split"] = True
        parallel["account_for_loss_in_pipeline_split"] = True
    scenario["parallel"] = parallel
    return scenario, notes


def mlperf_llama_record(rec, r, notes, skip, software, model, step_time_s):
    # An MLPerf Llama record from its name and table (rec), transcribed row (r) and notes: listed with the
    # reason when skipped, else its scenario and measured step time.
    if skip:
        rec["skip"] = skip
        rec["notes"] = notes
        return rec
    rec["software"] = software
    scenario, extra = mlperf_llama_scenario(r, rec["name"], model, software)
    rec["scenario"] = scenario
    rec["measured"] = {"step_time_s": step_time_s}
    rec["flops_formula"] = "megatron-causal"
    rec["notes"] = notes + extra + "; " + r["notes"]
    return rec


def mlperf_llama405b(out):
    # MLPerf Training v5.0 Llama 3.1 405B submissions: the layouts of the submissions' config scripts, the step times
    # of their result logs (transcribed in driver/data/validation/mlperf-llama31-405b.csv).
    here = Path(__file__).resolve().parent
    records = []
    for r in rows(here / "mlperf-llama31-405b.csv"):
        gpus = int(r["gpus"])
        gpu = ml405_gpu(r["gpu"])
        container = r["container"].rsplit("[ngc", 1)[-1].split("_")[0]
        software = ml405_software(container)
        system = r["results_dir"].rstrip("/").split("/")[-2].lower().replace("_", "-")
        rec = OrderedDict()
        rec["name"] = f"llama31-405b-{(gpu or 'gpu').lower()}-{system}-gpus{gpus}"
        rec["table"] = (gpu or "unknown").lower()
        notes = (f"{r['submitter']} {r['system_name']} ({r['gpu']}), {r['container']}; config {r['config_file']}; "
                 f"results {r['results_dir']} ({r['n_result_files']} files): block wall time per step "
                 f"{r['block_step_time_s_median']} s (min {r['block_step_time_s_min']}, max {r['block_step_time_s_max']}; "
                 f"{r['step_time_method']})")
        if r["tracked_step_time_s_median"]:
            notes += f", the implementation's per-step train_step_time {r['tracked_step_time_s_median']} s"
        if not r["config_match"].startswith("exact"):
            notes += f"; config check: {r['config_match']}"
        recipe = r["fp8_recipe"].split()[0]
        skip = None
        if gpu not in ML405_SYSTEMS:
            skip = f"{r['gpu']}: no cluster preset"
        elif software is None:
            skip = f"container {r['container']}: no software preset near it"
        elif recipe not in ML405_PRECISION:
            skip = f"FP8 recipe {r['fp8_recipe']} is not modelled"
        records.append(mlperf_llama_record(rec, r, notes, skip, software, "llama-3.1-405b",
                                           float(r["block_step_time_s_median"]) if not skip else None))
    write_set(out / "mlperf-llama31-405b.json", OrderedDict(
        source=("MLCommons MLPerf Training v5.0, benchmark llama31_405b: github:mlcommons/training_results_v5.0, every "
                "submission's config script and result logs (transcribed in driver/data/validation/mlperf-llama31-405b.csv)"),
        software=("NVIDIA's MLPerf Llama 3.1 405B implementation on NeMo and Megatron-core (NGC 25.01 and 25.04 "
                  "containers): presets nemo-25.02 and nemo-25.04, the nearest"),
        cluster=("DGX H100 (dgx-h100), DGX H200 (dgx-h200), GB200 NVL72 (gb200-nvl72), as each submission's systems json "
                 "states"),
        notes=("Measured: seconds per training step, the result logs' block wall time (evaluation excluded) over the "
               "block's steps, median over a submission's result files. Llama 3.1 405B, sequence 8192, FP8 GEMMs, "
               "TP with sequence parallelism and TP communication overlap, PP 8 interleaved, CP 2, distributed "
               "optimizer, the embedding and the loss counted as pipeline layers. One table per GPU type. Compared, "
               "never fitted on (fit false): another implementation than the NeMo tables the H100 parameters come "
               "from, the first measured H200 records, and GB200 at up to 2,496 GPUs."),
        fit=False,
        records=records))


def mlperf_v51_llama(out):
    # MLPerf Training v5.1 Llama 3.1 8B and 405B submissions (transcribed in
    # driver/data/validation/mlperf-v51-llama31.csv): the layouts of the config scripts, the result logs' step times.
    import re
    here = Path(__file__).resolve().parent
    models = {"llama31_8b": ("8b", "llama-3.1-8b"), "llama31_405b": ("405b", "llama-3.1-405b")}
    records = []
    for r in rows(here / "mlperf-v51-llama31.csv"):
        size, model = models[r["benchmark"]]
        gpus = int(r["gpus"])
        gpu = ml405_gpu(r["gpu"])
        tag = re.search(r"\[ngc(\d\d\.\d\d)", r["container"]) or re.search(r"pytorch:(\d\d\.\d\d)-py3", r["container"])
        software = ml405_software(tag.group(1)) if tag else None
        system = r["results_dir"].rstrip("/").split("/")[-2].lower().replace("_", "-").replace(".", "-")
        rec = OrderedDict()
        rec["name"] = f"llama31-{size}-{(gpu or 'gpu').lower()}-{r['submitter'].split()[0].lower()}-{system}-gpus{gpus}"
        rec["table"] = f"{size}-{(gpu or r['gpu'].split()[-1]).lower()}"
        tracked = r["tracked_step_time_s_median"].split()[0]
        measured = float(tracked) if tracked != "unknown" else float(r["block_step_time_s_median"])
        notes = (f"{r['submitter']} {r['system_name']} ({r['gpu']}), {r['container']}; config {r['config_file']}; "
                 f"results {r['results_dir']} ({r['n_result_files']} files): "
                 + (f"the implementation's per-step train_step_time, median {tracked} s; " if tracked != "unknown" else "")
                 + f"block wall time per step {r['block_step_time_s_median']} s (min {r['block_step_time_s_min']}, "
                 f"max {r['block_step_time_s_max']}; {r['step_time_method']})")
        if not r["config_match"].startswith("exact"):
            notes += f"; config check: {r['config_match']}"
        if not tag:
            notes += "; container not stated, assumed as in the notes"
        recipe = r["fp8_recipe"].split()[0]
        skip = None
        if gpu not in ML405_SYSTEMS:
            skip = f"{r['gpu']}: no GPU preset"
        elif "nebius" in system and r["benchmark"] == "llama31_405b":
            skip = ("the same result files as the v5.0 submission of this system (byte-identical), compared in "
                    "mlperf-llama31-405b")
        elif ml405_flag(r["fp4"]):
            skip = "NVFP4 GEMMs are not modelled"
        elif ml405_flag(r["fp8_attention"]):
            skip = "FP8 attention is not modelled"
        elif recipe not in ML405_PRECISION:
            skip = f"FP8 recipe {r['fp8_recipe']} is not modelled"
        elif software is None:
            skip = f"container {r['container']}: no software preset near it"
        records.append(mlperf_llama_record(rec, r, notes, skip, software, model, measured))
    write_set(out / "mlperf-v51-llama31.json", OrderedDict(
        source=("MLCommons MLPerf Training v5.1, benchmarks llama31_8b and llama31_405b: github:mlcommons/training_results_v5.1, "
                "every submission's config script and result logs (transcribed in driver/data/validation/mlperf-v51-llama31.csv)"),
        software=("NVIDIA's MLPerf Llama 3.1 implementation on NeMo and Megatron-core, as NVIDIA and the partners who copy it "
                  "submit it (NGC 25.09 tree: NeMo and Megatron-core 25.09-alpha, TransformerEngine 2.8, preset nemo-25.11, the "
                  "nearest; Cisco's H100 tree, NGC 25.01 with NeMo 2.4 and Megatron-core 0.13, preset nemo-25.02)"),
        cluster=("DGX/HGX H100 (dgx-h100), HGX H200 (dgx-h200), DGX/HGX B200 (dgx-b200), HGX B300 (dgx-b300), GB200 NVL72 "
                 "(gb200-nvl72) and GB300 NVL72 (gb300-nvl72), as each submission's systems json states"),
        notes=("Measured: seconds per training step, the median of the implementation's per-step wall time (DeltaTimingCallback) "
               "over a submission's result files (the block average where the logs print no per-step time); each block "
               "of these logs also holds seconds between its last step and the evaluation, which matter where a step is "
               "0.1-0.5 s. Llama 3.1 8B from scratch and 405B from Meta's checkpoint, sequence 8192, FP8 GEMMs with "
               "current scaling (delayed on Cisco's H100), distributed optimizer, bf16 gradient reduction. One table per "
               "model and GPU type. NVFP4 runs, AMD GPUs and the Nebius H200 405B resubmission are listed and skipped. "
               "Compared, never fitted on (fit false)."),
        fit=False,
        records=records))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    measured = Path(sys.argv[1])
    out = Path(__file__).resolve().parent
    dgxc(measured, out)
    megatron_readme(measured, out)
    fujii(measured, out)
    fujii_tsubame_sweep(out)
    mtnlg(measured, out)
    megatron_ci(measured, out)
    megatron_ci_speed(measured, out)
    megatron_bridge(out)
    mlperf_gpt3(out)
    mlperf_llama405b(out)
    mlperf_v51_llama(out)


if __name__ == "__main__":
    main()
