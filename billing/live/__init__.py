"""The live feed: the generations a batch stored, published to their organizations' groups on
the Channels layer, and the websocket consumer the members' generations page listens with."""
