"""What evalrun writes down, as pure data: the record of one sample (`records`) and how
anything an agent shaped is made writable (`writable`). No behaviour beyond validation; every
other package may import this one."""
