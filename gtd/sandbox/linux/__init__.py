"""The Linux backend: bubblewrap's mounts and namespaces, seccomp, Landlock, resource limits and the
launcher that applies them inside the sandbox."""
