// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title TaskEscrow
/// @notice Holds the native-token reward of a marketplace task until the poster (or the service's
///         arbiter) releases it to the worker, or refunds it to the poster.
///         Every state change happens before the value transfer (checks-effects-interactions) and
///         the paying functions are guarded against re-entrance.
contract TaskEscrow {
    enum Status {
        None,
        Funded,
        Released,
        Refunded
    }

    struct Escrow {
        address poster;
        Status status;
        uint256 amount;
    }

    address public immutable arbiter;
    mapping(bytes32 => Escrow) private _escrows;
    uint256 private _lock = 1;

    event TaskFunded(bytes32 indexed taskId, address indexed poster, uint256 amount, uint256 total);
    event TaskReleased(bytes32 indexed taskId, address indexed worker, uint256 amount);
    event TaskRefunded(bytes32 indexed taskId, address indexed poster, uint256 amount);

    error ZeroAmount();
    error ZeroAddress();
    error NotFunded(bytes32 taskId);
    error NotPoster(address caller, bytes32 taskId);
    error NotAuthorized(address caller, bytes32 taskId);
    error TransferFailed();
    error Reentrancy();

    modifier nonReentrant() {
        if (_lock != 1) revert Reentrancy();
        _lock = 2;
        _;
        _lock = 1;
    }

    constructor(address arbiter_) {
        if (arbiter_ == address(0)) revert ZeroAddress();
        arbiter = arbiter_;
    }

    /// @notice Funds a new task, or tops up a funded task of the same poster.
    function fund(bytes32 taskId) external payable nonReentrant {
        if (msg.value == 0) revert ZeroAmount();
        Escrow storage e = _escrows[taskId];
        if (e.status == Status.None) {
            e.poster = msg.sender;
            e.status = Status.Funded;
        } else if (e.status != Status.Funded) {
            revert NotFunded(taskId);
        } else if (e.poster != msg.sender) {
            revert NotPoster(msg.sender, taskId);
        }
        e.amount += msg.value;
        emit TaskFunded(taskId, msg.sender, msg.value, e.amount);
    }

    /// @notice Pays the escrowed amount to `worker`. Poster or arbiter only.
    function release(bytes32 taskId, address payable worker) external nonReentrant {
        if (worker == address(0)) revert ZeroAddress();
        Escrow storage e = _escrows[taskId];
        if (e.status != Status.Funded) revert NotFunded(taskId);
        if (msg.sender != e.poster && msg.sender != arbiter) revert NotAuthorized(msg.sender, taskId);

        uint256 amount = e.amount;
        e.amount = 0;
        e.status = Status.Released;
        emit TaskReleased(taskId, worker, amount);

        (bool ok,) = worker.call{value: amount}("");
        if (!ok) revert TransferFailed();
    }

    /// @notice Returns the escrowed amount to the poster. Poster or arbiter only.
    function refund(bytes32 taskId) external nonReentrant {
        Escrow storage e = _escrows[taskId];
        if (e.status != Status.Funded) revert NotFunded(taskId);
        if (msg.sender != e.poster && msg.sender != arbiter) revert NotAuthorized(msg.sender, taskId);

        address poster = e.poster;
        uint256 amount = e.amount;
        e.amount = 0;
        e.status = Status.Refunded;
        emit TaskRefunded(taskId, poster, amount);

        (bool ok,) = payable(poster).call{value: amount}("");
        if (!ok) revert TransferFailed();
    }

    function getEscrow(bytes32 taskId) external view returns (address poster, Status status, uint256 amount) {
        Escrow storage e = _escrows[taskId];
        return (e.poster, e.status, e.amount);
    }
}
