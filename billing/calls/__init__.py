"""A finished call as billing takes it: its record as the gateway hands it over (`records`),
built as its tries go (`building`), what it costs (`cost`), who is told of it (`observers`),
and the encoding that never costs a call its record (`encodable`, `storable`)."""
