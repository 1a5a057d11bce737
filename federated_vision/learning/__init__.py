"""The machinery every algorithm shares: `local` (the clients' local step,
written once, and the per-client client work generated from a local
objective), `client_groups` (the same step, several clients per TFF slot),
`compose` (FedAvg's round as a composed TFF process), `stateful` (an
algorithm's own round with client and server state, client outputs and its
own metrics: the research API) and `sampling` (the clients of a round).
"""
