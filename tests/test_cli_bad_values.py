"""Option values a user mistypes (`--now`, `--port`) and a saved plan whose `now` was edited: exit 1,
one error naming the option (or the plan's field), what was expected and what was found, no
traceback, and nothing changed anywhere. A time that is no calendar time is never read as another
time: `--now 20261301000000` (month 13) once planned as of 20260130100000099."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_cli_apply_safety import cli, digest, make_project, saved_plan

EXPECTED = "expected an instant time (yyyyMMddHHmmss[SSS]) or ISO-8601"


@pytest.mark.parametrize(("value", "why"), [
    ("20261301000000", "month must be in 1..12"),         # month 13: strptime once read it as Jan 30
    ("20260230000000000", "day is out of range for month"),
    ("99999999999999", "month must be in 1..12"),
    ("20260106250000", "hour must be in 0..23"),
    ("", "the value is empty"),                            # `--now "$NOW"` with NOW unset
    ("  ", "the value is empty"),
])
@pytest.mark.parametrize("command", [["plan"], ["docs", "generate"], ["apply", "--auto-approve"]])
def test_a_now_that_is_no_calendar_time_is_refused_naming_it(
        command: list[str], value: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(tmp_path / "p")
    before = digest(root)
    code, out, err = cli(capsys, *command, "--now", value, "--project-dir", str(root))
    assert (code, out) == (1, "")
    assert err.splitlines() == [f"error: --now: {EXPECTED}, got {value!r}: {why}"]
    assert digest(root) == before and not (root / "target").exists()


@pytest.mark.parametrize("value", [
    "9999-12-31T23:59:59-12:00",   # year 10000 in UTC: an internal OverflowError
    "0001-01-01T00:00:00+14:00",   # before year 1 in UTC: the same
    "0999-01-01T00:00:00",         # a 16-digit instant time: an internal ValueError
])
@pytest.mark.parametrize("command", [["plan"], ["docs", "generate"], ["apply", "--auto-approve"]])
def test_a_now_outside_the_years_an_instant_time_names_is_refused_naming_it(
        command: list[str], value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(tmp_path / "p")
    before = digest(root)
    code, out, err = cli(capsys, *command, "--now", value, "--project-dir", str(root))
    assert (code, out) == (1, "")
    assert err.splitlines() == [f"error: --now: {EXPECTED}, got {value!r}: it lies outside the years 1000 to 9999 "
                                "that instant times name"]
    assert digest(root) == before and not (root / "target").exists()


def test_a_valid_now_still_plans_as_of_that_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(tmp_path / "p")
    code, out, _ = cli(capsys, "plan", "--now", "20260106000000", "--project-dir", str(root))
    assert code in (0, 2) and out.startswith("runner plan: project cli, as of 20260106000000999\n")


REPLAN = "To fix this, re-create the plan with `runner plan --out` rather than editing it."


def _apply_edited_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], **edits: str) -> tuple[Path, list[str]]:
    """A saved plan with `edits` to its fields, applied: the plan file and the error lines, after
    checking that apply failed (exit 1, nothing on stdout) and left the project as it was."""
    root = make_project(tmp_path / "p")
    plan_file = tmp_path / "plan.json"
    data = saved_plan(root, capsys, plan_file)
    data.update(edits)
    plan_file.write_text(json.dumps(data))
    before = digest(root)
    code, out, err = cli(capsys, "apply", str(plan_file), "--project-dir", str(root))
    assert (code, out) == (1, "")
    assert digest(root) == before
    return plan_file, err.splitlines()


@pytest.mark.parametrize("now", ["20261301000000999", "20260230000000000"])
def test_a_saved_plan_whose_now_is_no_calendar_time_is_refused(
        now: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan_file, (first, second) = _apply_edited_plan(tmp_path, capsys, now=now)
    assert first.startswith(f"error: plan file {plan_file}: $.now is no calendar time: expected an instant time "
                            f"(yyyyMMddHHmmssSSS), got {now!r} (")
    assert first.endswith("); nothing was applied")
    assert second == REPLAN


@pytest.mark.parametrize("offset", ["+24:00", "-99:99", "+05:75", "+23:60"])
def test_a_saved_plan_whose_now_offset_is_no_utc_offset_is_refused(
        offset: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The schema's pattern admits any two digits each side: +24:00 and -99:99 were an internal
    # ValueError from datetime; +05:75 was read as +06:15, another moment than the plan's.
    plan_file, (first, second) = _apply_edited_plan(tmp_path, capsys, now_offset=offset)
    assert first.startswith(f"error: plan file {plan_file} does not match schemas/plan.schema.json at $.now_offset: ")
    assert f"{offset!r}" in first or f'"{offset}"' in first, first
    assert first.endswith("; nothing was applied")
    assert second == REPLAN


def test_a_saved_plan_whose_now_at_its_offset_is_past_year_9999_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 9999-12-31 23:59 at -12:00 is in year 10000 in UTC: an internal OverflowError at apply.
    plan_file, lines = _apply_edited_plan(tmp_path, capsys, now="99991231235959999", now_offset="-12:00")
    assert lines == [
        f"error: plan file {plan_file}: $.now '99991231235959999' at $.now_offset '-12:00' lies outside the years "
        "1000 to 9999 that instant times name; nothing was applied", REPLAN]


@pytest.mark.parametrize("port", ["99999", "-5", "65536", "http"])
def test_a_port_out_of_range_is_a_usage_error_not_an_internal_one(
        port: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(tmp_path / "p")
    before = digest(root)
    code, out, err = cli(capsys, "docs", "serve", "--port", port, "--project-dir", str(root))
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"error: runner docs: argument --port: expected a port number from 0 to 65535 (0 picks a free one), "
        f"got {port!r}", "To fix this, see `runner docs --help`."]
    assert digest(root) == before and not (root / "target").exists()


@pytest.mark.parametrize(("variable", "value"), [
    ("AWS_ENDPOINT_URL", "not a url"),             # a stray space: "Invalid DNS Label found in URI host"
    ("AWS_ENDPOINT_URL_S3", "ftp://127.0.0.1:9000"),
    ("AWS_ENDPOINT_URL", "http://"),
])
def test_an_s3_endpoint_variable_that_is_no_endpoint_is_named_in_the_error(
        variable: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "p"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: s3\n")
    (root / "tables" / "t.yml").write_text("name: t\npath: s3://bucket/t\n")
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, value)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    code, out, _ = cli(capsys, "status", "--project-dir", str(root))
    assert code == 1
    assert out.splitlines()[:3] == [
        "! t (s3://bucket/t)",
        f"    the S3 endpoint {variable} is {value!r}: expected host:port or an http(s) URL such as "
        "http://127.0.0.1:9000",
        f"    To fix this, correct {variable} in the environment, or unset it to use AWS's own endpoint."]


@pytest.mark.parametrize(("host", "why"), [
    ("", "the value is empty"),                          # `--host "$HOST"` unset listened on every interface
    ("  ", "the value is empty"),
])
def test_an_empty_host_is_a_usage_error_not_every_interface(
        host: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(tmp_path / "p")
    code, out, err = cli(capsys, "docs", "serve", "--host", host, "--port", "0", "--project-dir", str(root))
    assert (code, out) == (1, "")
    assert err.splitlines()[0].startswith(f"error: runner docs: argument --host: {why}"), err
    assert not (root / "target").exists()


def test_a_host_that_is_no_address_names_the_host_not_the_port(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(tmp_path / "p")
    code, out, err = cli(capsys, "docs", "serve", "--host", "999.1.1.1", "--port", "0", "--project-dir", str(root))
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert lines[0].startswith("error: --host 999.1.1.1: not an address or name this machine can listen on ("), err
    assert lines[1] == "To fix this, pass --host 127.0.0.1 (this machine only), 0.0.0.0 (every interface) or " \
                       "one of this machine's addresses or names."
    assert not (root / "target").exists()  # refused before the report was written


def test_an_address_of_another_machine_names_the_host_and_a_taken_port_the_port(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    root = make_project(tmp_path / "p")
    code, _, err = cli(capsys, "docs", "serve", "--host", "192.0.2.1", "--port", "0", "--project-dir", str(root))
    assert code == 1 and "To fix this, pass --host 127.0.0.1, 0.0.0.0, or an address of this machine." in err, err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, _, err = cli(capsys, "docs", "serve", "--port", str(port), "--project-dir", str(root))
    assert code == 1 and "To fix this, choose another port with --port (0 picks a free one)." in err, err


@pytest.mark.parametrize(("argv", "message"), [
    # str.isdigit() says yes to '²' and int() no: argparse then said "invalid _threads value: '²'",
    # naming a function of ours. '٣' (an Arabic-Indic 3) is a digit to both, and no number to a shell.
    (["apply", "--threads", "²"], "runner apply: argument --threads: expected a whole number from 1 to 64, got '²'"),
    (["apply", "--threads", "٣"], "runner apply: argument --threads: expected a whole number from 1 to 64, got '٣'"),
    (["import", "w", "--max-depth", "²"],
     "runner import: argument --max-depth: expected a whole number from 0 to 100, got '²'"),
    (["docs", "serve", "--port", "²"],
     "runner docs: argument --port: expected a port number from 0 to 65535 (0 picks a free one), got '²'"),
])
def test_a_number_in_digits_other_than_0_to_9_is_a_usage_error_naming_the_option(
        argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, *argv, "--project-dir", str(tmp_path))
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == f"error: {message}"
