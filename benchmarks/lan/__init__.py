"""The shaped-LAN benchmark: ComputeShare's modes beside torch DDP (gloo) on a virtual LAN."""
