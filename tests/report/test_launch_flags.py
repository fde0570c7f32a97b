"""catalogs/engine_flags.yaml is read once while it is unchanged, and no caller can alter
what the next one reads (solver/report/launch.flag_data)."""

import shutil

from solver.report import launch


def test_flag_data_is_parsed_once_and_each_caller_gets_its_own_copy(monkeypatch):
    calls = []
    real = launch.load_yaml_file

    def counting(path):
        calls.append(path)
        return real(path)

    monkeypatch.setattr(launch, "load_yaml_file", counting)
    launch._FLAG_DATA.clear()
    first = launch.flag_data()
    first["engines"]["vllm"]["flags"].clear()  # a caller that mutates its copy
    second = launch.flag_data()
    assert len(calls) == 1
    assert second["engines"]["vllm"]["flags"], "the second read saw the first caller's edit"


def test_flag_data_reads_the_file_again_once_it_changes(monkeypatch, tmp_path):
    shutil.copytree(launch.catalog_dir(), tmp_path / "catalogs")
    monkeypatch.setattr(launch, "catalog_dir", lambda: tmp_path / "catalogs")
    before = launch.flag_data()
    path = tmp_path / "catalogs" / "engine_flags.yaml"
    path.write_text(path.read_text() + "\nadded_for_the_test: 1\n")
    after = launch.flag_data()
    assert "added_for_the_test" not in before and after["added_for_the_test"] == 1
