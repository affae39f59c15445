"""Infrastructure: the database router and roles, the request middleware, log redaction, the client's
address and the system checks. Wiring that Django and the servers call; no decision lives here."""
