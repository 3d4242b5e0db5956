"""The keys of the screen in view, generated from its bindings and the app's (never typed twice); keys
that do not apply here are left out, two columns fit every screen's keys in 80x24."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from textual import actions
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingsMap, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from tui.format import LIFETIME_LEGEND
from tui.screens.context import EndpointScreen
from tui.widgets.edit_mode import HELP_ROW, FieldInput, RawTextArea

CLOSE_HINT = "escape, q or ? closes this help"
NOTES = (
    "Acceptance under the endpoint's threshold for a while → WARN; under the critical level → CRIT.",
    '"–": a figure that is not known (the backend lacks it, or too few scrapes yet).',
    LIFETIME_LEGEND,
)
KEY_WIDTH = 9
TEXT_WIDTH = 26  # two columns of key + text in the 78 columns of the frame
TEXTUAL_SCREEN_ACTIONS = frozenset({"app.focus_next", "app.focus_previous", "screen.copy_text"})


@dataclass
class KeyRow:
    keys: list[str]
    text: str
    section: str  # "screen" (this screen's keys) or "app" (everywhere)


def declared_bindings(node: DOMNode, active: Iterable[ActiveBinding] = ()) -> list[Binding]:
    """The node's bindings as Textual merges them (a subclass's key replaces its base's), then those bound
    at run time that `active` shows for the node."""
    keys: dict[str, list[Binding]] = {}
    for cls in reversed(type(node).__mro__):
        if issubclass(cls, DOMNode) and "BINDINGS" in vars(cls):
            keys.update(BindingsMap(vars(cls)["BINDINGS"]).key_to_bindings)
    bindings = [binding for key_bindings in keys.values() for binding in key_bindings]
    known = {(binding.key, binding.action) for binding in bindings}
    bindings += [
        item.binding
        for item in active
        if item.node is node and (item.binding.key, item.binding.action) not in known
    ]
    return bindings


def _spectops(node: DOMNode, active: Iterable[ActiveBinding] = ()) -> list[Binding]:
    """The node's own bindings, without those every Textual screen has (focus moves, copying)."""
    return [
        binding for binding in declared_bindings(node, active) if binding.action not in TEXTUAL_SCREEN_ACTIONS
    ]


def action_state(screen: Screen[Any], action: str, node: DOMNode) -> bool | None:
    """What `check_action` says of a binding's action, as Textual asks it: False hides the key."""
    app = screen.app
    namespace, name, parameters = actions.parse(action)
    targets: dict[str, DOMNode | None] = {"app": app, "screen": screen, "focused": screen.focused}
    target = targets.get(namespace) if namespace else node
    return (target or node).check_action(name, parameters)


def _focused_spectops(screen: Screen[Any]) -> list[tuple[str, DOMNode]]:
    """The focused widget and its containers with keys of spectop's own (not every Input's editing keys)."""
    chain: list[tuple[str, DOMNode]] = []
    node: DOMNode | None = screen.focused
    while node is not None and node is not screen:
        if _declared_by_spectop(node):
            chain.append(("screen", node))
        node = node.parent
    return chain


def _declared_by_spectop(node: DOMNode) -> set[str]:
    """The actions of the bindings spectop's own classes declare for `node` (not Textual's)."""
    return {
        binding.action
        for cls in type(node).__mro__
        if cls.__module__.startswith("tui.") and "BINDINGS" in vars(cls)
        for binding in Binding.make_bindings(vars(cls)["BINDINGS"])
    }


def key_rows(screen: Screen[Any]) -> list[KeyRow]:
    """This screen's keys (the focused widget's first), then the app's, one row per action. A key has the
    one meaning Textual runs: the screen's `a` hides the app's; a key passed on to the app's action keeps
    the app's row."""
    app = screen.app
    rows: dict[tuple[str, str], KeyRow] = {}
    claimed: set[str] = set()
    # The order Textual looks a key up in: from the focused widget up, then the screen, then the app.
    resolution: list[tuple[str, DOMNode]] = [*_focused_spectops(screen), ("screen", screen), ("app", app)]
    active = list(screen.active_bindings.values())
    app_actions = {binding.action for binding in _spectops(app, active)}
    for section, node in resolution:
        own = _declared_by_spectop(node) if section == "screen" and node is not screen else None
        for binding in _spectops(node, active):
            if own is not None and binding.action not in own:
                continue  # an Input's or TextArea's editing key
            if action_state(screen, binding.action, node) is False:
                continue  # not a key of this screen now (+ / - live, the bench in a replay): passed on
            if binding.key in claimed:
                continue  # a nearer binding takes this key here
            if section != "app" and binding.action.startswith("app.") and binding.action[4:] in app_actions:
                continue  # the app's own action: its row says it
            claimed.add(binding.key)
            text = binding.tooltip or binding.description
            if not text:
                continue
            row = rows.get((section, binding.action)) or rows.get((section, text))
            if row is None:
                row = rows[(section, text)] = KeyRow([], text, section)
            rows[(section, binding.action)] = row
            display = app.get_key_display(binding)
            if display not in row.keys:
                row.keys.append(display)
            if binding.tooltip:
                row.text = binding.tooltip
    unique = list({id(row): row for row in rows.values()}.values())
    keys, text = HELP_ROW
    has_fields = bool(screen.query(FieldInput)) or bool(screen.query(RawTextArea))
    if has_fields:  # how typing starts (a digit too: no binding says it) and ends
        editing = next((row for row in unique if row.text == text), None)
        if editing is not None:
            editing.keys += [key for key in keys if key not in editing.keys]
        elif not set(keys) & {key for row in unique for key in row.keys}:  # (the raw view's ⏎ / i say theirs)
            unique.append(KeyRow(list(keys), text, "screen"))
    for row in unique:
        row.keys.sort(key=len)  # q before ^q
    return sorted(unique, key=lambda row: row.section == "app")  # the screen's rows first, in order


def _column(title: str, rows: list[KeyRow]) -> Content:
    lines = [Content.styled(title, "bold")]
    for row in rows:
        # Whole, on as many lines as it takes (a cut description says half of what the key does).
        first, *more = textwrap.wrap(row.text, TEXT_WIDTH) or [""]
        lines.append(Content.assemble((" ".join(row.keys).ljust(KEY_WIDTH), "bold $primary"), " ", first))
        lines += [Content(" " * (KEY_WIDTH + 1) + part) for part in more]
    return Content("\n").join(lines)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen VerticalScroll {
        width: 78; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; border-subtitle-color: $text-muted; background: $surface; padding: 0 1;
    }
    HelpScreen Horizontal { height: auto; }
    HelpScreen .keys { width: 1fr; height: auto; }
    HelpScreen #screen-keys { margin-right: 2; }
    HelpScreen #notes { color: $text-muted; margin-top: 1; }
    HelpScreen #intro { background: $boost; margin-bottom: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),
        Binding("question_mark", "close", "Close", show=False),
    ]

    def __init__(self, shown_for: Screen[Any]) -> None:
        super().__init__()
        self.shown_for = shown_for
        self.rows = key_rows(shown_for)

    def compose(self) -> ComposeResult:
        name = type(self.shown_for).__name__.removesuffix("Screen").lower() or "screen"
        screen_rows = [row for row in self.rows if row.section == "screen"]
        app_rows = [row for row in self.rows if row.section == "app"]
        with VerticalScroll() as frame:
            frame.border_title = f"spectop keys · {name}"
            frame.border_subtitle = CLOSE_HINT
            if isinstance(self.shown_for, EndpointScreen) and self.shown_for.context.intro:
                yield Static(self.shown_for.context.intro, id="intro", markup=False)  # `spectop demo`'s hints
            with Horizontal():
                if screen_rows:
                    yield Static(
                        _column(f"on this screen ({name})", screen_rows), id="screen-keys", classes="keys"
                    )
                yield Static(_column("everywhere", app_rows), id="app-keys", classes="keys")
            if isinstance(self.shown_for, EndpointScreen):  # the screens that show figures and alerts
                yield Static(Content("\n").join(Content(note) for note in NOTES), id="notes")

    def action_close(self) -> None:
        self.dismiss()
