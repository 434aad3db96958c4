"""MkDocs hook: the CLI and spec reference of docs/guide/cli.md, generated from the code.

``<!-- cli-reference -->`` becomes every command's ``--help`` (click's own text, so the page
cannot drift from the CLI); ``<!-- spec-ops -->`` a table of the ops a spec can name, with their
signatures and the first line of their docstrings.
"""
from __future__ import annotations

import inspect
from typing import Any

import click

PAGE = "guide/cli.md"


def _help(cmd: click.Command, name: str, parent: Any = None) -> str:
    ctx = click.Context(cmd, info_name=name, parent=parent, terminal_width=100, max_content_width=100)
    return cmd.get_help(ctx)


def cli_reference() -> str:
    from tabprep.cli.main import cli

    root = click.Context(cli, info_name="tabprep", terminal_width=100, max_content_width=100)
    parts = ["### tabprep", "", "```text", cli.get_help(root), "```", ""]
    for name in cli.list_commands(root):
        cmd = cli.get_command(root, name)
        parts += [f"### tabprep {name}", "", "```text", _help(cmd, name, root), "```", ""]
    return "\n".join(parts)


def spec_ops() -> str:
    from tabprep.ops import registered_ops
    from tabprep.workflow.spec import op_signature

    rows = ["| op | parameters | what it does |", "|---|---|---|"]
    for name, cls in sorted(registered_ops().items()):
        if not cls.__module__.startswith("tabprep."):
            continue
        doc = (inspect.getdoc(cls) or "").strip().split("\n\n")[0].replace("\n", " ").replace("|", "\\|")
        sig = op_signature(cls).replace("|", "\\|")
        rows.append(f"| `{name}` | `{sig}` | {doc} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    return markdown.replace("<!-- cli-reference -->", cli_reference()).replace("<!-- spec-ops -->", spec_ops())
