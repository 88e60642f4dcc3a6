break *crash
run
backtrace
x/s 0x400000
continue
backtrace
info registers x0 x1 pc
continue
info registers
