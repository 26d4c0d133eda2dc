"""Generative annotation assistants with assigned arms (docs/domain.md, "Annotation assistants")."""
