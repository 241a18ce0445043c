"""Where routing is: selectors to models, provider filters, the ordered candidates (`candidates`),
the offerings' measured performance they sort by, sticky sessions, the candidate cache, and the
trace a call keeps of it."""
