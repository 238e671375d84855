"""The backend-neutral sandbox policy and its inputs: what a phase may read, write and reach, built once
from config and rendered by each backend (linux/, macos/)."""
