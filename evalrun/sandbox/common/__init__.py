"""What several backends share: processes and their output, file transfer, clearing paths,
owner markers and sweeps, limits, the exec sessions of container backends and the verifier's
no-trace seccomp filter."""
