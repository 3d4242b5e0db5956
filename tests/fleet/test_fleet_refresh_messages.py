"""A fleet refresh tells each screen in one message, not one message per instance (with 1,000 instances,
1,000 `EndpointUpdated` messages per refresh cost more than the table they redraw), and that message says
the refresh is whole: it is drawn at once, not after the dashboard's batching delay."""

from __future__ import annotations

from typing import Any

from textual.message import Message
from textual.screen import Screen

from tests.fleet.fake_fleet import scripted_app, scripted_readings
from tests.ui.ui_waiting import wait_for
from tui.widgets.fleet_table import FleetTable
from tui.widgets.messages import EndpointsUpdated, EndpointUpdated

INSTANCES = 400


async def test_a_refresh_of_400_instances_is_one_message_to_each_screen_drawn_at_once() -> None:
    app = scripted_app(INSTANCES)
    posted: list[Message] = []
    post = Screen.post_message

    def counting(self: Screen[Any], message: Message) -> bool:
        if isinstance(message, EndpointUpdated | EndpointsUpdated):
            posted.append(message)
        return post(self, message)

    Screen.post_message = counting  # type: ignore[method-assign]
    try:
        async with app.run_test(size=(200, 50)) as pilot:
            await wait_for(pilot, lambda: bool(app.screen.query(FleetTable)))
            table = app.screen.query_one(FleetTable)
            await wait_for(pilot, lambda: len(table.endpoints) == INSTANCES)
            told = [
                name
                for message in posted
                if isinstance(message, EndpointsUpdated)
                for name in message.endpoints
            ]
            assert not [message for message in posted if isinstance(message, EndpointUpdated)]
            assert len(posted) == len(app.screen_stack) == 1  # the whole refresh at once
            assert all(isinstance(message, EndpointsUpdated) and message.immediate for message in posted)
            # every instance was told, once, in the order the source gave them
            assert len(told) == INSTANCES and set(told) == set(table.endpoints)
            first_seen = list(dict.fromkeys(told))
            assert first_seen == [reading.name for reading in scripted_readings(INSTANCES)]
    finally:
        Screen.post_message = post  # type: ignore[method-assign]
