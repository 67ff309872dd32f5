module registry-load

go 1.22
