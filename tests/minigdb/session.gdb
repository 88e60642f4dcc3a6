break add
break fact
info breakpoints
run
info registers x0 x1 pc
x/4x &counter
set var $x1 = 10
set var *(long*)&counter = 40
x/2xg &counter
continue
info registers x19
continue
continue
backtrace
stepi
stepi
stepi
delete 2
info breakpoints
watch *&counter
continue
info breakpoints
kill
delete
run
