"""Mapping: an AdapterSpec applied to one raw row becomes canonical Conversations (apply.py is the only door):
turns, role aliases, tool calls and declarations, chat templates, candidate answers; tracing shows where a field
went."""
