"""Shell completion scripts (bash, zsh, fish) derived from the argparse parser, so they never drift from it.

`spectop --completion bash > ~/.local/share/bash-completion/completions/spectop`, or
`eval "$(spectop --completion bash)"`; zsh: `spectop --completion zsh > "${fpath[1]}/_spectop"`;
fish: `spectop --completion fish > ~/.config/fish/completions/spectop.fish`.

What is completed: the commands (and `config`'s actions), each command's options, the values of options
and arguments with `choices` (`spectop config example vllm`), and file names everywhere else.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field

SHELLS = ("bash", "zsh", "fish")


@dataclass
class Command:
    """One level of the command tree: its options, their choices, its sub-commands."""

    path: tuple[str, ...]
    options: list[str] = field(default_factory=list)
    choices: dict[str, list[str]] = field(default_factory=dict)
    takes_value: set[str] = field(default_factory=set)
    help: dict[str, str] = field(default_factory=dict)
    commands: dict[str, Command] = field(default_factory=dict)
    description: str = ""
    arguments: list[str] = field(default_factory=list)  # the choices of a positional argument, else files


def command_tree(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Command:
    node = Command(path, description=_first_sentence(parser.description or ""))
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                child = command_tree(sub, (*path, name))
                child.description = _first_sentence(helps.get(name) or child.description)
                node.commands[name] = child
            continue
        if not action.option_strings and action.choices:
            node.arguments += [str(choice) for choice in action.choices]
        for option in action.option_strings:
            node.options.append(option)
            node.help[option] = _first_sentence(action.help or "")
            if action.nargs != 0:
                node.takes_value.add(option)
            if action.choices:
                node.choices[option] = [str(choice) for choice in action.choices]
    return node


def _first_sentence(text: str) -> str:
    text = " ".join(text.replace("%(default)s", "").split())
    return re.split(r"(?<=\.)\s+(?=[A-Z])", text, maxsplit=1)[0].rstrip(".")


def _walk(node: Command) -> list[Command]:
    nodes = [node]
    for child in node.commands.values():
        nodes += _walk(child)
    return nodes


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    tree = command_tree(parser)
    prog = parser.prog
    if shell == "bash":
        return _bash(tree, prog)
    if shell == "zsh":
        return "#compdef " + prog + "\n" + _bash_functions(tree, prog) + _ZSH_TAIL.format(prog=prog)
    if shell == "fish":
        return _fish(tree, prog)
    raise ValueError(f"unknown shell {shell!r}: one of {', '.join(SHELLS)}")


def _key(node: Command) -> str:
    return " ".join(node.path)


def _words(words: list[str]) -> str:
    return " ".join(_bash_quote(word) for word in words)


def _bash_quote(word: str) -> str:
    return word if re.fullmatch(r"[\w@%+=:,./-]+", word) else "'" + word.replace("'", "'\\''") + "'"


def _bash_functions(tree: Command, prog: str) -> str:
    name = re.sub(r"\W", "_", prog)
    lines = [
        f"# {prog} completion, generated from its argument parser by `{prog} --completion`.",
        f"_{name}_complete() {{",
        "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}",
        '    local path="" word i',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        "        word=${COMP_WORDS[i]}",
        '        case "$path|$word" in',
    ]
    for node in _walk(tree):
        for child in node.commands:
            nested = _key(node.commands[child])
            lines.append(f'            {_bash_quote(_key(node) + "|" + child)}) path="{nested}" ;;')
    lines += ["        esac", "    done", '    case "$path|$prev" in']
    for node in _walk(tree):
        for option, choices in node.choices.items():
            lines.append(
                f"        {_bash_quote(_key(node) + '|' + option)}) "
                f'COMPREPLY=($(compgen -W "{_words(choices)}" -- "$cur")); return ;;'
            )
        plain = sorted(node.takes_value - set(node.choices))
        if plain:
            pattern = "|".join(_bash_quote(_key(node) + "|" + option) for option in plain)
            lines.append(f'        {pattern}) COMPREPLY=($(compgen -f -- "$cur")); return ;;')
    lines += ["    esac", "    local words", '    case "$path" in']
    for node in _walk(tree):
        lines.append(f'        {_bash_quote(_key(node))}) words="{_words(node.options)}"')
        if node.commands or node.arguments:
            lines.append(
                f'            [[ $cur == -* ]] || words="{_words(list(node.commands) or node.arguments)}" ;;'
            )
        else:
            files = '{ COMPREPLY=($(compgen -f -- "$cur")); return; }'
            lines.append(f"            [[ $cur == -* ]] || {files} ;;")
    lines += ["    esac", '    COMPREPLY=($(compgen -W "$words" -- "$cur"))', "}", ""]
    return "\n".join(lines)


def _bash(tree: Command, prog: str) -> str:
    name = re.sub(r"\W", "_", prog)
    return _bash_functions(tree, prog) + f"complete -o filenames -o bashdefault -F _{name}_complete {prog}\n"


# zsh runs the bash function through bashcompinit: one generator, the same answers in both shells.
_ZSH_TAIL = """autoload -U +X bashcompinit && bashcompinit
complete -o filenames -o bashdefault -F _{prog}_complete {prog}
"""


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish(tree: Command, prog: str) -> str:
    lines = [f"# {prog} completion, generated from its argument parser by `{prog} --completion`."]
    lines.append(f"complete -c {prog} -f")
    for node in _walk(tree):
        if node.path:
            parent = node.path[:-1]
            condition = _fish_condition(tree, parent)
            lines.append(
                f"complete -c {prog} -n {_fish_quote(condition)} -a {_fish_quote(node.path[-1])}"
                f" -d {_fish_quote(node.description)}"
            )
        condition = _fish_condition(tree, node.path)
        for option in node.options:
            spec = f"-l {option[2:]}" if option.startswith("--") else f"-s {option[1:]}"
            extra = ""
            if option in node.choices:
                extra = f" -x -a {_fish_quote(' '.join(node.choices[option]))}"
            elif option in node.takes_value:
                extra = " -r -F"
            described = f"-d {_fish_quote(node.help[option])}"
            lines.append(f"complete -c {prog} -n {_fish_quote(condition)} {spec}{extra} {described}")
        if node.arguments:
            lines.append(
                f"complete -c {prog} -n {_fish_quote(condition)} -a {_fish_quote(' '.join(node.arguments))}"
            )
        elif node.path and not node.commands:
            lines.append(f"complete -c {prog} -n {_fish_quote(condition)} -F")
    return "\n".join(lines) + "\n"


def _fish_condition(tree: Command, path: tuple[str, ...]) -> str:
    """True when the command line holds exactly `path` as its (sub)commands."""
    if not path:
        return "not __fish_seen_subcommand_from " + " ".join(tree.commands)
    parts = [f"__fish_seen_subcommand_from {name}" for name in path]
    children = _find(tree, path).commands
    if children:
        parts.append("not __fish_seen_subcommand_from " + " ".join(children))
    return "; and ".join(parts)


def _find(tree: Command, path: tuple[str, ...]) -> Command:
    node = tree
    for name in path:
        node = node.commands[name]
    return node
