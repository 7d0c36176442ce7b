# Object files are build products, not something to ship as text.
printf '\x7fELF fake object\n' > out/main.o
printf '\x7fELF fake object\n' > out/util.o
