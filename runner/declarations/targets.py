"""Targets: per-environment Spark settings and threads in project.yml, chosen with `--target`.

As with dbt profiles, `targets:` names environments (`dev` on `local[*]`, `prod` on a cluster or
a Spark Connect endpoint) and `target:` names the one used when `--target` is not given. A target
overrides the project's own `spark:` block field by field (and `spark.conf` key by key) and its
`threads:`; a target that sets `remote` drops the project's `master`, and the other way round, so
a target always says which of the two it uses.

Secrets come only from the environment: a value may contain `${env:NAME}`, replaced by the
variable's value when the target is used. Only the chosen target's references are resolved (dev
runs need no prod secrets), but every target is checked: a malformed reference, or a literal value
for a conf key naming a secret, password, token or credential, is a problem wherever it is.
`runner ls` shows values as written, references unresolved, so it never prints a secret.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from runner.declarations.merge import is_missing, lookup
from runner.declarations.model import SparkSettings
from runner.declarations.yaml_io import FieldPath, Loaded
from runner.errors import Problem

DEFAULT_THREADS = 1
RUNNER_DEFAULT = "runner default"
_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_ENV_NAME = re.compile(r"env:([A-Za-z_][A-Za-z0-9_]*)")
_SECRET_KEY = re.compile(r"secret|password|passwd|token|credential", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Effective:
    """One effective run setting as written (references unresolved) and where it came from."""

    name: str
    shown: str
    origin: str


@dataclass(frozen=True, slots=True)
class RunSettings:
    """The chosen target's Spark settings (secrets resolved), threads, and their provenance."""

    target: str | None
    spark: SparkSettings
    threads: int
    provenance: tuple[Effective, ...]


def choose(doc: Loaded, requested: str | None, env: Mapping[str, str]) -> tuple[RunSettings, list[Problem]]:
    """The run settings of the requested target (else project.yml's `target:`, else none).

    Args:
        doc: project.yml as the schema accepted it.
        requested: `--target`, or None.
        env: the environment `${env:NAME}` is resolved against.
    """
    problems = list(_syntax_problems(doc))
    name, found = _target_name(doc, requested)
    problems += found
    layers: list[tuple[FieldPath, str]] = [((), "")]
    if name is not None and not found:
        layers.append((("targets", name), f"target {name}, "))
    values: dict[str, tuple[object, FieldPath, str]] = {}
    for prefix, label in layers:
        block = lookup(doc.data, (*prefix, "spark"))
        if isinstance(block, Mapping):
            picked = [key for key in ("master", "remote") if isinstance(block.get(key), str)]
            if picked:  # a layer choosing how to reach Spark replaces the other way entirely
                values.pop("spark.master", None)
                values.pop("spark.remote", None)
            for key in picked:
                values[f"spark.{key}"] = (block[key], (*prefix, "spark", key), label)
            conf = block.get("conf")
            for key, value in (conf.items() if isinstance(conf, Mapping) else ()):
                values[f"spark.conf.{key}"] = (value, (*prefix, "spark", "conf", key), label)
        threads = lookup(doc.data, (*prefix, "threads"))
        if isinstance(threads, int) and not isinstance(threads, bool):
            values["threads"] = (threads, (*prefix, "threads"), label)
    resolved: dict[str, str] = {}
    for key, (value, path, _) in values.items():
        text, missing = _resolve(_text(value), env)
        resolved[key] = text
        problems += [doc.problem(path, f"refers to environment variable {var}, which is not set; "
                                 f"set it, or choose another target") for var in missing]
        problems += _empty_problems(doc, key, _text(value), path, env)
    provenance = tuple(Effective(key, _text(value), f"{label}{_where(doc, path)}")
                       for key, (value, path, label) in values.items())
    if "spark.master" not in values and "spark.remote" not in values:
        provenance = (Effective("spark.master", SparkSettings().master, RUNNER_DEFAULT), *provenance)
    if "threads" not in values:
        provenance = (*provenance, Effective("threads", str(DEFAULT_THREADS), RUNNER_DEFAULT))
    spark = SparkSettings(
        master=resolved.get("spark.master", SparkSettings().master),
        remote=resolved.get("spark.remote"),
        conf=tuple((key.removeprefix("spark.conf."), text) for key, text in resolved.items()
                   if key.startswith("spark.conf.")),
    )
    threads = values.get("threads", (DEFAULT_THREADS,))[0]
    assert isinstance(threads, int)
    return RunSettings(name, spark, threads, provenance), problems


def _empty_problems(doc: Loaded, key: str, written: str, path: FieldPath,
                    env: Mapping[str, str]) -> list[Problem]:
    """How Spark is reached, and secrets, never come from a variable set to nothing: an undefined CI
    secret reaches the job as one (`${{ secrets.X }}`), and the run would connect with an empty
    token or key and fail, or authenticate as no one, far from the cause. Other conf values may
    rightly be empty (`-Xss4m ${env:EXTRA}`)."""
    if key not in ("spark.master", "spark.remote") and not _names_secret(key.removeprefix("spark.conf.")):
        return []
    problems = []
    for reference in _REFERENCE.findall(written):
        name = _ENV_NAME.fullmatch(reference)
        var = name.group(1) if name is not None else None
        if var is None or var not in env or env[var].strip():
            continue
        shown = json.dumps(written.replace(f"${{{reference}}}", env[var]), ensure_ascii=False)
        problems.append(doc.problem(path, f"is {shown} once ${{{reference}}} is resolved: environment variable "
                                          f"{var} is set but empty (as an undefined CI secret gives); set it, or "
                                          "choose another target"))
    return problems


def _target_name(doc: Loaded, requested: str | None) -> tuple[str | None, list[Problem]]:
    targets = lookup(doc.data, ("targets",))
    declared = sorted(targets) if isinstance(targets, Mapping) else []
    default = lookup(doc.data, ("target",))
    listing = ", ".join(declared) if declared else "none (add a `targets:` block)"
    if requested is not None:
        if requested in declared:
            return requested, []
        return requested, [doc.problem(("targets",) if declared else (),
                                       f'--target "{requested}" is not declared{_near(requested, declared)}; '
                                       f"declared targets: {listing}")]
    if is_missing(default) or not isinstance(default, str):
        return None, []
    if default in declared:
        return default, []
    return default, [doc.problem(("target",), f'names target "{default}", which is not declared'
                                 f"{_near(default, declared)}; declared targets: {listing}")]


def _near(name: str, declared: list[str]) -> str:
    close = difflib.get_close_matches(name, declared, n=1)
    return f' (did you mean "{close[0]}"?)' if close else ""


def _syntax_problems(doc: Loaded) -> Iterator[Problem]:
    """Malformed `${...}` references and literal secrets, in every target."""
    prefixes: list[FieldPath] = [()]
    targets = lookup(doc.data, ("targets",))
    if isinstance(targets, Mapping):
        prefixes += [("targets", str(name)) for name in targets]
    for prefix in prefixes:
        block = lookup(doc.data, (*prefix, "spark"))
        if not isinstance(block, Mapping):
            continue
        fields: list[tuple[FieldPath, str, object]] = [
            ((*prefix, "spark", key), key, block[key]) for key in ("master", "remote") if key in block]
        conf = block.get("conf")
        fields += [((*prefix, "spark", "conf", key), str(key), value)
                   for key, value in (conf.items() if isinstance(conf, Mapping) else ())]
        for path, key, value in fields:
            text = _text(value)
            for reference in _REFERENCE.findall(text):
                if not _ENV_NAME.fullmatch(reference):
                    yield doc.problem(path, f"${{{reference}}} is not a reference this runner understands; "
                                      "expected ${env:NAME}, NAME an environment variable")
            if _names_secret(key) and _REFERENCE.sub("", text).strip():
                yield doc.problem(path, f"{key} looks like a secret, and secrets come only from the "
                                  "environment; write the value as ${env:NAME} and set NAME where the runner runs")
            if key == "remote" and re.search(r";token=(?!\$\{env:)", text):
                yield doc.problem(path, "the Spark Connect token is written out; secrets come only from the "
                                  "environment: write `;token=${env:NAME}`")


def _names_secret(key: str) -> bool:
    # `...credentials.provider` and the like name a class or a mechanism, not a secret value.
    return bool(_SECRET_KEY.search(key)) and not key.lower().endswith(("provider", ".class", ".type"))


def _resolve(text: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
    missing: list[str] = []

    def value(match: re.Match[str]) -> str:
        name = _ENV_NAME.fullmatch(match.group(1))
        if name is None:
            return match.group(0)  # reported by _syntax_problems
        if name.group(1) not in env:
            missing.append(name.group(1))
            return ""
        return env[name.group(1)]

    return _REFERENCE.sub(value, text), missing


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _where(doc: Loaded, path: FieldPath) -> str:
    mark = doc.where(path)
    return f"{doc.file}:{mark.line}:{mark.column}"
