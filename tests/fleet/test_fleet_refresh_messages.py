"""A fleet refresh tells the screens in a few batched messages, not one message per instance: with
1,000 instances, 1,000 `EndpointUpdated` messages per refresh cost more than the table they redraw."""

from __future__ import annotations

from typing import Any

from textual.message import Message
from textual.screen import Screen

from tests.fleet.fake_fleet import scripted_app, scripted_readings
from tests.ui.ui_waiting import wait_for
from tui.ui.messages import EndpointsUpdated, EndpointUpdated
from tui.widgets.fleet_table import FleetTable

INSTANCES = 400


async def test_a_refresh_of_400_instances_is_a_few_messages_to_each_screen() -> None:
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
            assert len(posted) <= INSTANCES // 50  # a batch per screen turn, not one per instance
            # every instance was told, once per batch it changed in, in the order the source gave them
            assert set(told) == set(table.endpoints) and len(set(told)) == INSTANCES
            first_seen = list(dict.fromkeys(told))
            assert first_seen == [reading.name for reading in scripted_readings(INSTANCES)]
    finally:
        Screen.post_message = post  # type: ignore[method-assign]
