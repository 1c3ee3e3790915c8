// Command ssh-git-server is a minimal SSH git server for Gantry's end-to-end tests: it lets a test fetch from a
// local bare repository over ssh:// with real key authentication and a real host key, which no sshd on the test
// machine provides. It serves nothing but git's pack protocol (git-upload-pack, git-receive-pack) for
// repositories below -root; there is no shell, no port forwarding and no pty.
//
// Usage:
//
//	ssh-git-server -listen 127.0.0.1:0 -host-key host_key -authorized-keys authorized_keys -root /srv/git [-exit-with-stdin]
//
// When it accepts connections it prints the address it listens on (e.g. 127.0.0.1:41234) as the only line on
// stdout; diagnostics go to stderr.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on; port 0 picks a free port (printed on stdout)")
	hostKeyFile := flag.String("host-key", "", "private host key file (e.g. from ssh-keygen -t ed25519)")
	authorizedKeysFile := flag.String("authorized-keys", "", "public keys allowed to log in, in authorized_keys format")
	root := flag.String("root", "", "folder holding the repositories; nothing outside it is served")
	exitWithStdin := flag.Bool("exit-with-stdin", false, "exit when stdin reaches EOF")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("ssh-git-server: ")
	if *hostKeyFile == "" || *authorizedKeysFile == "" || *root == "" {
		log.Fatal("-host-key, -authorized-keys and -root are required")
	}

	config, err := serverConfig(*hostKeyFile, *authorizedKeysFile)
	if err != nil {
		log.Fatal(err)
	}
	// Symlinks are resolved once here so that the containment check in repoDir compares real paths.
	rootDir, err := filepath.EvalSymlinks(*root)
	if err != nil {
		log.Fatal(err)
	}
	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if *exitWithStdin {
		// A test runner that dies without stopping the server closes the server's stdin pipe all the same,
		// so the server goes with it instead of lingering.
		go func() {
			io.Copy(io.Discard, os.Stdin)
			os.Exit(0)
		}()
	}
	// The caller waits for this line: the port is only known now when -listen asked for port 0.
	fmt.Println(listener.Addr().String())
	for {
		conn, err := listener.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go serveConn(conn, config, rootDir)
	}
}

func serverConfig(hostKeyFile, authorizedKeysFile string) (*ssh.ServerConfig, error) {
	hostKeyPEM, err := os.ReadFile(hostKeyFile)
	if err != nil {
		return nil, err
	}
	hostKey, err := ssh.ParsePrivateKey(hostKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("host key %s: %w", hostKeyFile, err)
	}
	authorized, err := readAuthorizedKeys(authorizedKeysFile)
	if err != nil {
		return nil, err
	}
	config := &ssh.ServerConfig{
		// Any user name is fine (clients say "git"); the key alone decides, as on git hosting services.
		PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if authorized[string(key.Marshal())] {
				return nil, nil
			}
			return nil, fmt.Errorf("key %s of %s@%s is not authorized", ssh.FingerprintSHA256(key), meta.User(), meta.RemoteAddr())
		},
	}
	config.AddHostKey(hostKey)
	return config, nil
}

// readAuthorizedKeys returns the keys of an authorized_keys file by their wire encoding, which is what
// PublicKeyCallback can compare against.
func readAuthorizedKeys(file string) (map[string]bool, error) {
	rest, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for len(bytes.TrimSpace(rest)) > 0 {
		key, _, _, next, err := ssh.ParseAuthorizedKey(rest)
		if err != nil {
			return nil, fmt.Errorf("authorized keys %s: %w", file, err)
		}
		keys[string(key.Marshal())] = true
		rest = next
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("authorized keys %s: no keys", file)
	}
	return keys, nil
}

func serveConn(conn net.Conn, config *ssh.ServerConfig, root string) {
	defer conn.Close()
	server, channels, requests, err := ssh.NewServerConn(conn, config)
	if err != nil {
		// Failed handshakes are what the negative tests provoke; logging them helps when a positive one fails.
		log.Printf("%s: handshake: %v", conn.RemoteAddr(), err)
		return
	}
	defer server.Close()
	go ssh.DiscardRequests(requests) // global requests: keepalives, tcpip-forward (refused)
	for newChannel := range channels {
		if newChannel.ChannelType() != "session" {
			newChannel.Reject(ssh.UnknownChannelType, "only session channels are served")
			continue
		}
		channel, channelRequests, err := newChannel.Accept()
		if err != nil {
			log.Printf("%s: accept channel: %v", conn.RemoteAddr(), err)
			continue
		}
		go serveSession(channel, channelRequests, root)
	}
}

// serveSession runs the session's one exec request. git sends GIT_PROTOCOL (protocol v2) as an env request
// before it, so that one variable is passed on; every other request is refused.
func serveSession(channel ssh.Channel, requests <-chan *ssh.Request, root string) {
	var env []string
	started := false
	for request := range requests {
		switch {
		case request.Type == "env" && !started:
			var variable struct{ Name, Value string }
			if ssh.Unmarshal(request.Payload, &variable) == nil && variable.Name == "GIT_PROTOCOL" {
				env = append(env, "GIT_PROTOCOL="+variable.Value)
				request.Reply(true, nil)
			} else {
				request.Reply(false, nil)
			}
		case request.Type == "exec" && !started:
			var command struct{ Line string }
			if ssh.Unmarshal(request.Payload, &command) != nil {
				request.Reply(false, nil)
				continue
			}
			started = true
			request.Reply(true, nil)
			go func() {
				status := runGit(channel, command.Line, root, env)
				channel.CloseWrite()
				channel.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
				channel.Close()
			}()
		default:
			request.Reply(false, nil) // shell, pty-req, subsystem, a second exec...
		}
	}
}

// runGit runs one git service for the client and returns its exit status; refusals are reported on the
// session's stderr, which git shows to its user.
func runGit(channel ssh.Channel, line, root string, env []string) uint32 {
	service, argument, _ := strings.Cut(line, " ")
	if service != "git-upload-pack" && service != "git-receive-pack" {
		fmt.Fprintf(channel.Stderr(), "ssh-git-server: only git-upload-pack and git-receive-pack are served, not %q\n", line)
		return 1
	}
	repoPath, err := unquote(argument)
	if err != nil {
		fmt.Fprintf(channel.Stderr(), "ssh-git-server: %v\n", err)
		return 1
	}
	dir, err := repoDir(root, repoPath)
	if err != nil {
		fmt.Fprintf(channel.Stderr(), "ssh-git-server: %v\n", err)
		return 1
	}
	// `git upload-pack` rather than git-upload-pack from PATH: the dashed programs live in git's exec path,
	// which is not on PATH everywhere.
	cmd := exec.Command("git", strings.TrimPrefix(service, "git-"), dir)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = channel
	cmd.Stderr = channel.Stderr()
	// Not cmd.Stdin = channel: Wait would then also wait for the client to close its side, which a client that
	// waits for the exit status first never does.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintf(channel.Stderr(), "ssh-git-server: %v\n", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(channel.Stderr(), "ssh-git-server: %v\n", err)
		return 1
	}
	go func() {
		io.Copy(stdin, channel)
		stdin.Close()
	}()
	err = cmd.Wait()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() >= 0 {
		return uint32(exitErr.ExitCode())
	}
	if err != nil {
		log.Printf("%s: %v", line, err)
		return 255 // killed by a signal, or the output could not be copied
	}
	return 0
}

// unquote undoes the shell quoting git applies to the repository path (sq_quote in git's quote.c): the path in
// single quotes, where a ' or ! in it closes the quote, follows backslash-escaped and reopens it. An unquoted word
// is taken as it is.
func unquote(argument string) (string, error) {
	if !strings.HasPrefix(argument, "'") {
		if argument == "" || strings.ContainsAny(argument, " \t\\\"") {
			return "", fmt.Errorf("cannot parse repository path %q", argument)
		}
		return argument, nil
	}
	var out strings.Builder
	for rest := argument; rest != ""; {
		switch {
		case rest[0] == '\'':
			end := strings.IndexByte(rest[1:], '\'')
			if end < 0 {
				return "", fmt.Errorf("unterminated quote in %q", argument)
			}
			out.WriteString(rest[1 : 1+end])
			rest = rest[2+end:]
		case rest[0] == '\\' && len(rest) > 1:
			out.WriteByte(rest[1])
			rest = rest[2:]
		default:
			return "", fmt.Errorf("cannot parse repository path %q", argument)
		}
	}
	return out.String(), nil
}

// repoDir maps the requested path (ssh://host/remote.git asks for "/remote.git", host:remote.git for
// "remote.git") to a folder below root, refusing anything that resolves outside it, symlinks included.
func repoDir(root, requested string) (string, error) {
	dir := filepath.Join(root, filepath.Clean("/"+requested))
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("repository %q does not exist", requested)
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("repository %q is outside the served folder", requested)
	}
	return real, nil
}
