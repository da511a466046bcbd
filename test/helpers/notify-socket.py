# A fake systemd notification socket: binds NOTIFY_SOCKET's path, prints each datagram on one
# line (newlines inside shown as "|"), and closes file descriptors passed with it (the
# BARRIER=1 protocol of systemd-notify, which waits until the receiver closes them), after
# holding them for the optional second argument's milliseconds (a busy service manager).
import array, os, socket, sys, time

path = sys.argv[1]
hold = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
print("listening", flush=True)
while True:
    msg, ancdata, _flags, _addr = s.recvmsg(65536, socket.CMSG_SPACE(64 * 4))
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds = array.array("i")
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
            if hold:
                time.sleep(hold)
            for fd in fds:
                os.close(fd)
    print(msg.decode("utf-8", "replace").replace("\n", "|"), flush=True)
