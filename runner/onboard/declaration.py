"""The declaration `runner import` writes for one table: a valid, unique name and the YAML text.

Pure: from the facts `discover.read_facts` read to text, so the same table always gives the same
file. What hoodie.properties records (type, keys, partition fields, ordering field) fills the
`table:` block, so `runner plan` reports drift when a writer changes them later. Retention and file
sizes are not recorded anywhere on a table, so the file sets none of them: it shows them commented
out with Hudi's defaults, and until the user sets them the project's defaults apply, else Hudi's (as
for any declaration). An imported table is therefore never resized unless project.yml says so, and
is cleaned as its project's other tables are. The one exception is the policy of the latest
completed clean, which the timeline records: that is set.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from runner.declarations import model
from runner.declarations.model import CleanPolicyName
from runner.declarations.policies import rule_for
from runner.declarations.sizes import format_size
from runner.onboard.discover import TableFacts

# The schema's `name`: a lowercase letter, then lowercase letters, digits or underscores; at most 128.
MAX_NAME = 128
_PREFIX = "t_"  # for names that would start with a digit


@dataclass(frozen=True, slots=True)
class Draft:
    """One declaration to write.

    Args:
        text: the YAML file's content.
        notes: what the user should know about the choices made (name changed, policy's source).
    """

    text: str
    notes: tuple[str, ...]


def base_name(table_name: str, *, folder: str = "") -> str:
    """`hoodie.table.name` made into a name the schema accepts: accents folded (`Café` is `cafe`,
    not `caf`), lower case, runs of anything else become one `_`, and a leading digit gets a `t_`
    prefix. When nothing usable is left (`???`, a name in another script), the last part of the
    table's `folder` made so, and `table` when that has nothing either."""
    for candidate in (table_name, folder.rstrip("/").rsplit("/", 1)[-1]):
        name = _usable(candidate)
        if name:
            return name
    return "table"


def _usable(text: str) -> str:
    folded = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    name = re.sub(r"[^a-z0-9]+", "_", folded.lower()).strip("_")
    if name and not name[0].isalpha():
        name = _PREFIX + name
    return name[:MAX_NAME].rstrip("_")


class Names:
    """Chooses names no declaration has yet: `base`, else `base_2`, `base_3`, ... (within MAX_NAME).

    Remembers the last number tried per base, so that a lake with hundreds of tables of one
    `hoodie.table.name` (the same table in many databases) costs one check per table, not hundreds.
    """

    def __init__(self, taken: Iterable[str]) -> None:
        self._taken = set(taken)
        self._next: dict[str, int] = {}

    def choose(self, base: str) -> str:
        number = self._next.get(base, 1)
        candidate = base
        while candidate in self._taken:
            number += 1
            suffix = f"_{number}"
            candidate = base[: MAX_NAME - len(suffix)] + suffix
        self._next[base] = number
        self._taken.add(candidate)
        return candidate


def draft(facts: TableFacts, *, name: str, path: str, schema_ref: str) -> Draft:
    """The declaration of one table.

    Args:
        facts: what the table says about itself.
        name: the declaration's name (`base_name`, made unique by `Names`).
        path: the table's `path` as it is to be written (relative to the project when inside it).
        schema_ref: the table schema, relative to the declaration's folder, for editors.
    """
    config = facts.config
    notes = list(facts.notes)
    if name != config.name:
        notes.append(f"named {name}: hoodie.table.name is {quoted(config.name)}")
    clean, clean_note = _clean_block(facts)
    if clean_note:
        notes.append(clean_note)
    lines = [
        f"# yaml-language-server: $schema={schema_ref}",
        f"# Written by `runner import` from the table's .hoodie/hoodie.properties (hoodie.table.name: "
        f"{quoted(config.name)}).",
        "",
        f"name: {scalar(name)}",
        f"path: {scalar(path)}",
        "",
        *clean,
        "",
        "# File sizes: until set here, project.yml's defaults.file_sizing applies, else none (files are",
        "# left as they are). Set what the table's writers use (hoodie.parquet.max.file.size,",
        "# hoodie.parquet.small.file.limit, hoodie.copyonwrite.insert.split.size; Hudi's defaults shown)",
        "# to have `runner apply` rewrite small files into larger ones.",
        "# file_sizing:",
        f"#   max_file_size: {format_size(model.DEFAULT_MAX_FILE_SIZE)}",
        f"#   small_file_limit: {format_size(model.DEFAULT_SMALL_FILE_LIMIT)}",
        f"#   insert_split_size: {model.DEFAULT_INSERT_SPLIT_SIZE}",
        "",
        "table:                            # as hoodie.properties has it; `runner plan` reports drift from it",
        f"  type: {config.table_type.value}",
        f"  record_key: {_list(config.record_key_fields)}",
        f"  partition_by: {_list(config.partition_fields)}" + ("" if config.partition_fields
                                                               else "                # not partitioned"),
    ]
    if config.ordering_fields:
        lines.append(f"  precombine_field: {scalar(','.join(config.ordering_fields))}")
    if not config.populate_meta_fields:
        lines.append("  meta_fields: false                # virtual keys: hoodie.populate.meta.fields=false")
    return Draft("\n".join(lines) + "\n", tuple(notes))


def _clean_block(facts: TableFacts) -> tuple[list[str], str | None]:
    """The `clean:` lines (commented out unless the timeline shows the policy), and a note when the
    timeline's policy was used or could not be."""
    evidence = facts.clean
    known = {policy.value for policy in CleanPolicyName}
    if evidence is None or evidence.policy not in known:
        why = ("The timeline has no completed clean that records a policy." if evidence is None else
               f"Its latest clean records policy {quoted(evidence.policy)}, which the runner does not know.")
        lines = [
            "# Retention: until set here, project.yml's defaults.clean applies, else Hudi's (shown). Set",
            "# what the table's writers use (hoodie.cleaner.policy, hoodie.cleaner.commits.retained).",
            f"# {why}",
            "# clean:",
            f"#   policy: {model.DEFAULT_POLICY.value}",
            f"#   commits_retained: {model.DEFAULT_COMMITS_RETAINED}",
        ]
        note = None if evidence is None else (f"clean policy {quoted(evidence.policy)} in {evidence.file} is "
                                              "not one the runner knows; the project's default policy applies, "
                                              f"else Hudi's {model.DEFAULT_POLICY}")
        return lines, note
    rule = rule_for(CleanPolicyName(evidence.policy))
    hudi_key = {"commits_retained": "hoodie.cleaner.commits.retained",
                "file_versions_retained": "hoodie.cleaner.fileversions.retained",
                "hours_retained": "hoodie.cleaner.hours.retained"}[rule.field]
    lines = [
        "clean:",
        f"  # The policy of the table's latest completed clean ({scalar(evidence.file)}). How much it",
        f"  # retains is not recorded on the timeline: set {rule.field} ({hudi_key}) to what the",
        f"  # table's writers use; until then the project default applies, else Hudi's {rule.default}.",
        f"  policy: {evidence.policy}",
    ]
    return lines, f"clean policy {evidence.policy}, from the latest completed clean ({evidence.file})"


_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./-]*")
# Words YAML 1.1 reads as booleans or null when unquoted.
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


def scalar(text: str) -> str:
    """`text` as a YAML scalar that every YAML reader reads back as that string: plain when that
    is unambiguous, else double-quoted (JSON's escapes are valid YAML)."""
    if _PLAIN.fullmatch(text) and text.lower() not in _YAML_WORDS:
        return text
    return quoted(text)


def quoted(text: str) -> str:
    """`text` in double quotes, as written: letters outside ASCII stay themselves (`"Café"`, not
    `"Caf\\u00e9"`); only quotes, backslashes and control characters are escaped, as JSON and YAML
    both read them back."""
    return json.dumps(text, ensure_ascii=False)


def _list(fields: Sequence[str]) -> str:
    return "[" + ", ".join(scalar(f) for f in fields) + "]"
