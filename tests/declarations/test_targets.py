"""Targets in project.yml: chosen with --target, merged over the project's own settings, secrets
only from the environment, every problem reported at once with file:line, and shown by `runner ls`."""

from __future__ import annotations

import json

import pytest

from runner.cli import main
from runner.declarations.loader import load_project
from runner.errors import DeclarationError

from .conftest import WriteProject

PROJECT = """\
name: p
spark:
  master: local[2]
  conf:
    spark.sql.shuffle.partitions: 4
threads: 2
target: dev
targets:
  dev:
    threads: 1
  prod:
    spark:
      remote: sc://connect.internal:15002/;token=${env:CONNECT_TOKEN}
      conf:
        spark.hadoop.fs.s3a.secret.key: ${env:S3_SECRET}
        spark.sql.shuffle.partitions: 400
        spark.hadoop.fs.s3a.aws.credentials.provider: com.amazonaws.auth.EnvironmentVariableCredentialsProvider
  cluster:
    spark:
      master: spark://10.0.0.5:7077
"""
TABLE = {"tables/t.yml": "name: t\npath: warehouse/t\n"}
PROD_ENV = {"CONNECT_TOKEN": "tok-123", "S3_SECRET": "s3-secret"}


def test_the_default_target_overrides_field_by_field(write_project: WriteProject) -> None:
    project = load_project(write_project(TABLE, PROJECT), env={})
    assert project.target == "dev"
    assert project.threads == 1
    assert project.spark.master == "local[2]" and project.spark.remote is None
    assert project.spark.conf == (("spark.sql.shuffle.partitions", "4"),)


def test_a_remote_target_resolves_secrets_from_the_environment(write_project: WriteProject) -> None:
    project = load_project(write_project(TABLE, PROJECT), target="prod", env=PROD_ENV)
    assert project.spark.remote == "sc://connect.internal:15002/;token=tok-123"
    assert dict(project.spark.conf) == {
        "spark.sql.shuffle.partitions": "400", "spark.hadoop.fs.s3a.secret.key": "s3-secret",
        "spark.hadoop.fs.s3a.aws.credentials.provider": "com.amazonaws.auth.EnvironmentVariableCredentialsProvider"}
    assert project.threads == 2  # not overridden by prod: the project's own value
    origins = {name: origin for name, _, origin in project.run_provenance}
    assert origins["spark.remote"] == "target prod, project.yml:13:7"
    assert origins["threads"] == "project.yml:6:1"
    assert "spark.master" not in origins  # a target choosing Connect drops the project's master


def test_a_master_target_replaces_the_master(write_project: WriteProject) -> None:
    project = load_project(write_project(TABLE, PROJECT), target="cluster", env={})
    assert (project.spark.master, project.spark.remote) == ("spark://10.0.0.5:7077", None)


def test_an_unset_secret_is_a_problem_only_for_the_chosen_target(write_project: WriteProject) -> None:
    root = write_project(TABLE, PROJECT)
    load_project(root, target="dev", env={})  # dev needs no prod secrets
    with pytest.raises(DeclarationError) as raised:
        load_project(root, target="prod", env={"CONNECT_TOKEN": "x"})
    [problem] = raised.value.problems
    assert (problem.file, problem.line) == ("project.yml", 15)
    assert "S3_SECRET, which is not set" in problem.message


@pytest.mark.parametrize(("env", "line", "message"), [
    # A CI secret that is not defined reaches the job as a variable set to "": the run would go on
    # with an empty token or S3 key and fail (or authenticate as no one) far from the cause.
    ({"CONNECT_TOKEN": "", "S3_SECRET": "s"}, 13,
     'targets.prod.spark.remote: is "sc://connect.internal:15002/;token=" once ${env:CONNECT_TOKEN} is '
     "resolved: environment variable CONNECT_TOKEN is set but empty (as an undefined CI secret gives); set it, or "
     "choose another target"),
    ({"CONNECT_TOKEN": "t", "S3_SECRET": "  "}, 15,
     'targets.prod.spark.conf["spark.hadoop.fs.s3a.secret.key"]: is "  " once ${env:S3_SECRET} is '
     "resolved: environment variable S3_SECRET is set but empty (as an undefined CI secret gives); set it, or "
     "choose another target"),
])
def test_a_secret_set_but_empty_is_a_problem_naming_the_variable(
        env: dict[str, str], line: int, message: str, write_project: WriteProject) -> None:
    with pytest.raises(DeclarationError) as raised:
        load_project(write_project(TABLE, PROJECT), target="prod", env=env)
    [problem] = raised.value.problems
    assert (problem.file, problem.line) == ("project.yml", line)
    assert f"{problem.field}: {problem.message}" == message


def test_a_master_that_resolves_to_nothing_is_a_problem(write_project: WriteProject) -> None:
    root = write_project(TABLE, "name: p\nspark:\n  master: ${env:SPARK_MASTER}\n")
    assert load_project(root, env={"SPARK_MASTER": "yarn"}).spark.master == "yarn"
    with pytest.raises(DeclarationError) as raised:
        load_project(root, env={"SPARK_MASTER": ""})
    [problem] = raised.value.problems
    assert str(problem) == ('project.yml:3:3: spark.master: is "" once ${env:SPARK_MASTER} is resolved: environment '
                            "variable SPARK_MASTER is set but empty (as an undefined CI secret gives); set it, or "
                            "choose another target")


def test_an_empty_variable_in_an_ordinary_conf_value_is_kept(write_project: WriteProject) -> None:
    root = write_project(TABLE, "name: p\nspark:\n  conf:\n    spark.driver.extraJavaOptions: -Xss4m ${env:EXTRA}\n")
    assert dict(load_project(root, env={"EXTRA": ""}).spark.conf) == {"spark.driver.extraJavaOptions": "-Xss4m "}


def test_every_target_problem_is_reported_at_once(write_project: WriteProject) -> None:
    bad = """\
name: p
target: staging
targets:
  prod:
    spark:
      remote: sc://h:15002/;token=abc
      conf:
        spark.hadoop.fs.s3a.secret.key: hunter2
        spark.x: ${NAME}
    threads: 0
"""
    with pytest.raises(DeclarationError) as raised:
        load_project(write_project(TABLE, bad), env={})
    found = {(p.line, p.field): p.message for p in raised.value.problems}
    assert "not declared; declared targets: prod" in found[(2, "target")]
    assert "token is written out" in found[(6, "targets.prod.spark.remote")]
    assert "looks like a secret" in found[(8, 'targets.prod.spark.conf["spark.hadoop.fs.s3a.secret.key"]')]
    assert "expected ${env:NAME}" in found[(9, 'targets.prod.spark.conf["spark.x"]')]
    assert (10, "targets.prod.threads") in found


def test_an_unknown_target_names_the_declared_ones(
    write_project: WriteProject, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_project(TABLE, PROJECT)
    assert main(["validate", "--project-dir", str(root), "--target", "qa"]) == 1
    out = capsys.readouterr().out
    assert '--target "qa" is not declared; declared targets: cluster, dev, prod' in out
    assert main(["validate", "--project-dir", str(root), "--target", "prd"]) == 1
    out = capsys.readouterr().out
    assert '--target "prd" is not declared (did you mean "prod"?); declared targets: cluster, dev, prod' in out


def test_ls_shows_where_each_run_setting_came_from_without_secrets(
    write_project: WriteProject, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in PROD_ENV.items():
        monkeypatch.setenv(key, value)
    root = write_project(TABLE, PROJECT)
    assert main(["ls", "--project-dir", str(root), "--target", "prod", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["target"] == "prod"
    assert data["run_settings"]["spark.conf.spark.hadoop.fs.s3a.secret.key"] == {
        "value": "${env:S3_SECRET}",
        "source": "target prod, project.yml:15:9",
    }
    assert main(["ls", "--project-dir", str(root), "--target", "prod"]) == 0
    text = capsys.readouterr().out
    assert "run settings (target prod)" in text and "target prod, project.yml:13:7" in text
    assert "tok-123" not in text and "s3-secret" not in text


def test_the_readme_cluster_example_is_valid(write_project: WriteProject) -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    example = readme.split("# project.yml\n", 1)[1].split("```", 1)[0]
    root = write_project({}, example)
    assert load_project(root, env={}).spark.master == "local[*]"
    cluster = load_project(root, target="cluster", env={})
    assert (cluster.spark.master, cluster.threads) == ("spark://spark-master.internal:7077", 4)
    prod = load_project(root, target="prod", env={"SPARK_CONNECT_TOKEN": "t"})
    assert prod.spark.remote == "sc://connect.internal:15002/;use_ssl=true;token=t"
