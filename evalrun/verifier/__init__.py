"""What runs in or around a task's hidden verifier: the verifier kit bundled verifiers use
(`verifykit`, shipped into the sandbox as a file), and the hardening of verifiers evalrun did not
write (`hardening`, the start-up hook in `site/`)."""
