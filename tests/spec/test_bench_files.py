"""The benchmark reports users already have, read into calibrate's measurement records
(issue 45 item 8): GuideLLM's benchmarks.json, genai-perf's JSON and CSV exports and a
scrape of vLLM's /metrics. Every expected figure is derived by hand from the
hand-written fixtures in tests/fixtures/bench_reports/ (README.md there says which
schema each follows); every malformed file is one message naming the field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from solver.cli.main import main
from solver.errors import InputError
from solver.spec.bench_files import Replica, detect_kind, read_genai_perf, read_genai_perf_csv, read_guidellm
from solver.spec.prometheus_scrape import read_prometheus

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bench_reports"
GUIDELLM = FIXTURES / "guidellm-benchmarks.json"
GENAI_JSON = FIXTURES / "genai-perf-profile_export_genai_perf.json"
GENAI_CSV = FIXTURES / "genai-perf-profile_export_genai_perf.csv"
SCRAPE = FIXTURES / "vllm-metrics.txt"
H100 = Replica(gpu="h100-sxm", tp=1)
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"  # published as 16-bit safetensors (catalogs/models.yaml)


def _point(m):
    return (m.model, m.weights, m.batch, m.prompt_tokens, m.output_tokens, m.tpot_s, m.ttft_s)


@pytest.mark.parametrize(
    ("path", "kind"),
    [(GUIDELLM, "guidellm"), (GENAI_JSON, "genai-perf"), (GENAI_CSV, "genai-perf-csv"), (SCRAPE, "prometheus")],
)
def test_each_report_s_kind_is_told_from_its_contents(path, kind):
    assert detect_kind(path) == kind


def test_calibrate_s_own_csv_and_an_unknown_json_are_told_apart(tmp_path):
    own = tmp_path / "runs.csv"
    own.write_text("model,gpu,tp,weights,kv_cache,batch,prompt_tokens,output_tokens,tpot_ms\n")
    assert detect_kind(own) == "csv"
    other = tmp_path / "other.json"
    other.write_text('{"latency": 1}')
    with pytest.raises(InputError, match="--kind"):
        detect_kind(other)


def test_guidellm_gives_one_point_per_benchmark_of_its_sweep():
    a, b = read_guidellm(GUIDELLM, H100)
    # benchmark 0: concurrency mean 7.8 -> batch 8; prompt 1024.4 -> 1024; output 255.6 -> 256;
    # inter_token_latency_ms 9.7 -> 0.0097 s (the decode step, not time_per_output_token_ms 9.9,
    # which spreads the TTFT over every token); time_to_first_token_ms 61.5 -> 0.0615 s
    assert _point(a) == (LLAMA, "bf16", 8, 1024, 256, pytest.approx(0.0097), pytest.approx(0.0615))
    # benchmark 1: 31.4 -> 31; 1023.6 -> 1024; 256; 13.8 ms; 120 ms
    assert _point(b) == (LLAMA, "bf16", 31, 1024, 256, pytest.approx(0.0138), pytest.approx(0.120))
    assert (a.row, b.row, a.tp, a.count) == (1, 2, 1, 1)


def test_genai_perf_json_reads_its_averages_and_its_concurrency(tmp_path):
    (m,) = read_genai_perf(GENAI_JSON, H100)
    # avg TTFT 85 ms, avg ITL 12.5 ms, ISL 512, OSL 200, stimulus concurrency 16
    assert _point(m) == ("Qwen/Qwen2.5-7B-Instruct", "bf16", 16, 512, 200, pytest.approx(0.0125), pytest.approx(0.085))
    # a run at a request rate: Little's law, 6.25 requests/s x 2.560 s each = 16 in flight
    data = json.loads(GENAI_JSON.read_text())
    data["input_config"]["perf_analyzer"] = {"stimulus": {"request_rate": 6.25}}
    f = tmp_path / "rate.json"
    f.write_text(json.dumps(data))
    assert read_genai_perf(f, H100)[0].batch == 16


def test_genai_perf_csv_is_the_same_run_and_needs_the_model_named():
    with pytest.raises(InputError, match="give --model"):
        read_genai_perf_csv(GENAI_CSV, H100)
    (m,) = read_genai_perf_csv(GENAI_CSV, Replica("h100-sxm", model="qwen2.5-7b"))
    # the avg column; "2,560.00" is 2560 ms; concurrency by Little's law: 6.25/s x 2.56 s = 16
    assert _point(m) == ("qwen2.5-7b", "bf16", 16, 512, 200, pytest.approx(0.0125), pytest.approx(0.085))


def test_a_vllm_scrape_pools_its_engines():
    (m,) = read_prometheus(SCRAPE, Replica("h100-sxm", tp=2))
    # two engines: running 12 + 10 = 22; TTFT (3.0 + 2.4) s / (60 + 40) = 0.054 s;
    # inter-token (164.34 + 109.56) s / (14,940 + 9,960) = 273.9 / 24,900 = 0.011 s;
    # prompt (60,000 + 40,000) / 100 = 1,000 tokens; output (15,000 + 10,000) / 100 = 250
    assert _point(m) == (LLAMA, "bf16", 22, 1000, 250, pytest.approx(0.011), pytest.approx(0.054))
    assert (m.tp, m.count) == (2, 2)


def _scrape(tmp_path, edit):
    f = tmp_path / "metrics.txt"
    f.write_text(edit(SCRAPE.read_text()))
    return f


def test_without_length_histograms_the_token_counters_give_the_lengths(tmp_path):
    def drop(text):
        return "\n".join(x for x in text.splitlines() if "request_prompt_tokens" not in x and "request_generation_tokens" not in x)

    (m,) = read_prometheus(_scrape(tmp_path, drop), H100)
    # prompt_tokens_total 100,000 / request_success_total (50 + 10 + 40 + 0 = 100) = 1,000; 25,000 / 100 = 250
    assert (m.prompt_tokens, m.output_tokens) == (1000, 250)


def test_the_older_name_of_the_inter_token_histogram_is_read(tmp_path):
    (m,) = read_prometheus(_scrape(tmp_path, lambda t: t.replace("inter_token_latency_seconds", "time_per_output_token_seconds")), H100)
    assert m.tpot_s == pytest.approx(0.011)


@pytest.mark.parametrize(
    ("edit", "field", "says"),
    [
        # engine 0's le="0.06" bucket below its le="0.04" one: buckets count cumulatively
        (
            lambda t: t.replace(
                'engine="0",le="0.06",model_name="meta-llama/Llama-3.1-8B-Instruct"} 40.0',
                'engine="0",le="0.06",model_name="meta-llama/Llama-3.1-8B-Instruct"} 5.0',
            ),
            'vllm:time_to_first_token_seconds_bucket{le="0.06"}',
            "cumulatively",
        ),
        # +Inf buckets 60 + 40 = 100, but the counts say 60 + 50
        (
            lambda t: t.replace(
                'time_to_first_token_seconds_count{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 40.0',
                'time_to_first_token_seconds_count{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 50.0',
            ),
            'vllm:time_to_first_token_seconds_bucket{le="+Inf"}',
            "must equal",
        ),
        (lambda t: t.replace("} 12.0", "} 0.0").replace("} 10.0\n", "} 0.0\n", 1), "vllm:num_requests_running", "while the benchmark runs"),
        (lambda t: "\n".join(x for x in t.splitlines() if "time_to_first_token" not in x), "vllm:time_to_first_token_seconds_sum", "missing"),
        (lambda t: t + "vllm:num_requests_running{engine=0} 1\n", "vllm:num_requests_running labels", 'label="value"'),
        (lambda t: t + "this is not a sample\n", "line", "not a sample"),
        (lambda t: t.replace("} 164.34", "} nope"), "vllm:inter_token_latency_seconds_sum", "not a number"),
    ],
)
def test_a_malformed_scrape_is_one_message_naming_the_series(tmp_path, edit, field, says):
    with pytest.raises(InputError) as exc:
        read_prometheus(_scrape(tmp_path, edit), H100)
    assert exc.value.field == field and says in str(exc.value)


def _json_edit(tmp_path, path, edit):
    data = json.loads(path.read_text())
    edit(data)
    f = tmp_path / path.name
    f.write_text(json.dumps(data))
    return f


@pytest.mark.parametrize(
    ("edit", "field", "says"),
    [
        (lambda d: d["benchmarks"][1]["metrics"].pop("inter_token_latency_ms"), "benchmarks[1].metrics.inter_token_latency_ms", "missing"),
        (
            lambda d: d["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"].update(mean=-3),
            "benchmarks[0].metrics.time_to_first_token_ms.successful.mean",
            "(0, 1e+07]",
        ),
        (
            lambda d: d["benchmarks"][0]["metrics"]["request_totals"].update(successful=0),
            "benchmarks[0].metrics.request_totals.successful",
            "(0, 1e+09]",
        ),
        (lambda d: d.update(benchmarks=[]), "benchmarks", "non-empty"),
    ],
)
def test_a_malformed_guidellm_report_names_the_field(tmp_path, edit, field, says):
    with pytest.raises(InputError) as exc:
        read_guidellm(_json_edit(tmp_path, GUIDELLM, edit), H100)
    assert exc.value.field == field and says in str(exc.value)


@pytest.mark.parametrize(
    ("edit", "field", "says"),
    [
        (lambda d: d.pop("inter_token_latency"), "inter_token_latency", "--streaming"),
        (lambda d: d["time_to_first_token"].update(unit="s"), "time_to_first_token.unit", "'ms'"),
        (lambda d: d["input_sequence_length"].pop("avg"), "input_sequence_length.avg", "missing"),
        (
            lambda d: d["input_config"]["perf_analyzer"]["stimulus"].update(concurrency="lots"),
            "input_config.perf_analyzer.stimulus.concurrency",
            "number",
        ),
    ],
)
def test_a_malformed_genai_perf_export_names_the_field(tmp_path, edit, field, says):
    with pytest.raises(InputError) as exc:
        read_genai_perf(_json_edit(tmp_path, GENAI_JSON, edit), H100)
    assert exc.value.field == field and says in str(exc.value)


def test_a_malformed_genai_perf_csv_names_the_row_and_line(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text(GENAI_CSV.read_text().replace("Inter Token Latency (ms),12.50", "Inter Token Latency (ms),N/A"))
    with pytest.raises(InputError) as exc:
        read_genai_perf_csv(f, Replica("h100-sxm", model="qwen2.5-7b"))
    assert (exc.value.field, exc.value.line) == ("Inter Token Latency (ms)", 3)
    f.write_text("\n".join(x for x in GENAI_CSV.read_text().splitlines() if not x.startswith("Inter Token")))
    with pytest.raises(InputError, match="--streaming"):
        read_genai_perf_csv(f, Replica("h100-sxm", model="qwen2.5-7b"))


@pytest.mark.parametrize("report", [GUIDELLM, GENAI_JSON, SCRAPE])
def test_calibrate_reads_each_report_as_its_points(tmp_path, capsys, report):
    # the records reach the fit (its first line counts them); too few points to fit is exit 2, said in one line
    code = main(["calibrate", str(report), "--gpu", "h100-sxm", "-o", str(tmp_path / "cal.yaml")])
    out = capsys.readouterr()
    points = 2 if report == GUIDELLM else 1
    assert f"h100-sxm (vllm): {points} TPOT and {points} TTFT points" in out.out
    assert code in (0, 2) and "Traceback" not in out.err


def test_calibrate_names_a_missing_gpu_and_a_kind_given_by_flag(tmp_path, capsys):
    assert main(["calibrate", str(GUIDELLM), "-o", str(tmp_path / "c.yaml")]) == 2
    assert "--gpu" in capsys.readouterr().err
    renamed = tmp_path / "scrape.json"  # a name that says nothing true about it
    shutil.copy(SCRAPE, renamed)
    main(["calibrate", str(renamed), "--kind", "prometheus", "--gpu", "h100-sxm", "-o", str(tmp_path / "c.yaml")])
    assert "1 TPOT and 1 TTFT points" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["auto", "vllm-bench", "guidellm", "genai-perf"])
def test_json_nested_past_the_parser_s_depth_is_refused_not_a_crash(tmp_path, capsys, kind):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["calibrate", str(deep), "--kind", kind, "--gpu", "h100-sxm", "-o", str(tmp_path / "c.yaml")]) == 2
    assert "not valid JSON" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--model", "--gpu", "--weights", "--kv-cache"])
def test_calibrate_refuses_an_empty_name_naming_the_flag(tmp_path, capsys, flag):
    # an empty --kv-cache read as bf16, an empty --weights or --model as the report's own: a silent default
    argv = ["calibrate", str(GUIDELLM), "--gpu", "h100-sxm", flag, " ", "-o", str(tmp_path / "c.yaml")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{flag} = " in err and "must not be empty" in err and "Traceback" not in err
    assert not (tmp_path / "c.yaml").exists()
